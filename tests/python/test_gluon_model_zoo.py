"""mx.gluon.model_zoo.vision: every model builds with MXNet 1.9.1's parameter names, shapes and
counts; representative models run forward (hybridized == imperative); pretrained parameters
load from a local store and are refused clearly when absent (nothing is downloaded).

Set NANOMX_SLOW_TESTS=1 to also run every model forward at its full input size."""
import os
import zipfile

import numpy as np
import pytest

import nanomx as mx
from nanomx.gluon.model_zoo import model_store, vision


@pytest.fixture(autouse=True)
def _drain_engine():
    yield
    mx.nd.waitall()


def _build(name, **kwargs):
    """The model with fresh name counters, so that its prefix ends in 0 (resnetv10_)."""
    with mx.name.NameManager():
        return vision.get_model(name, **kwargs)


def _input_size(name):
    return 299 if name.startswith("inception") else 224


def _param_count(net):
    return sum(int(np.prod(p.shape)) for p in net.collect_params().values())


ALL_MODELS = sorted(vision._models)

# Totals including BatchNorm's running statistics, for 1000 classes at 224x224 (resnet18_v1:
# the count MXNet reports; the others are the published architectures' counts).
KNOWN_COUNTS = {"resnet18_v1": 11699112, "resnet50_v1": 25629032, "vgg16": 138357544,
                "alexnet": 61100840, "squeezenet1.0": 1248424, "squeezenet1.1": 1235496,
                "densenet121": 8062504, "mobilenet1.0": 4253864, "mobilenetv2_1.0": 3539136}


def test_model_list_and_unknown_name():
    assert len(ALL_MODELS) == 34
    with pytest.raises(ValueError, match="not supported. Available options"):
        vision.get_model("resnet19_v1")
    assert isinstance(vision.get_model("ResNet18_V1"), vision.ResNetV1)


@pytest.mark.parametrize("name", ALL_MODELS)
def test_every_model_builds_and_infers_its_shapes(name):
    net = _build(name)
    size = _input_size(name)
    net.infer_shape(mx.nd.zeros((1, 3, size, size)))
    params = net.collect_params()
    assert all(all(d > 0 for d in p.shape) for p in params.values())
    if name in KNOWN_COUNTS:
        assert _param_count(net) == KNOWN_COUNTS[name]
    prefix = net.prefix
    assert prefix.endswith("0_") and all(k.startswith(prefix) for k in params.keys())


def test_resnet18_v1_names_match_mxnet():
    net = _build("resnet18_v1", classes=10)
    net.infer_shape(mx.nd.zeros((1, 3, 32, 32)))
    shapes = {k: v.shape for k, v in net.collect_params().items()}
    assert list(shapes)[:6] == ["resnetv10_conv0_weight", "resnetv10_batchnorm0_gamma",
                                "resnetv10_batchnorm0_beta", "resnetv10_batchnorm0_running_mean",
                                "resnetv10_batchnorm0_running_var",
                                "resnetv10_stage1_conv0_weight"]
    assert shapes["resnetv10_conv0_weight"] == (64, 3, 7, 7)
    # stage2: the first block's body (conv0, conv1), then its projection shortcut (conv2).
    assert shapes["resnetv10_stage2_conv0_weight"] == (128, 64, 3, 3)
    assert shapes["resnetv10_stage2_conv2_weight"] == (128, 64, 1, 1)
    assert shapes["resnetv10_stage4_batchnorm4_running_var"] == (512,)
    assert shapes["resnetv10_dense0_weight"] == (10, 512)
    structural = net._collect_params_with_prefix()
    assert structural["features.5.0.downsample.0.weight"].name == "resnetv10_stage2_conv2_weight"
    assert structural["output.bias"].name == "resnetv10_dense0_bias"


def test_other_families_names():
    expected = {
        "resnet50_v2": ["resnetv20_batchnorm0_gamma", "resnetv20_stage1_conv3_weight",
                        "resnetv20_dense0_weight"],
        "vgg11_bn": ["vgg0_conv7_weight", "vgg0_batchnorm7_running_var", "vgg0_dense2_bias"],
        "alexnet": ["alexnet0_conv4_bias", "alexnet0_dense2_weight"],
        "squeezenet1.1": ["squeezenet0_conv25_weight"],
        "densenet121": ["densenet0_stage1_conv11_weight", "densenet0_conv1_weight",
                        "densenet0_stage4_batchnorm31_gamma", "densenet0_batchnorm4_gamma"],
        "mobilenet0.5": ["mobilenet0_conv26_weight", "mobilenet0_batchnorm26_beta"],
        "mobilenetv2_0.5": ["mobilenetv20_features_conv0_weight",
                            "mobilenetv20_features_linearbottleneck16_batchnorm2_gamma",
                            "mobilenetv20_features_conv1_weight",
                            "mobilenetv20_output_pred_weight"],
        "inceptionv3": ["inception30_A1_conv6_weight", "inception30_E2_batchnorm8_gamma",
                        "inception30_dense0_weight"],
    }
    for name, names in expected.items():
        params = _build(name).collect_params()
        for n in names:
            assert n in params, (name, n)


@pytest.mark.parametrize("name, size", [("resnet18_v1", 32), ("resnet18_v2", 32),
                                        ("resnet50_v1", 32), ("mobilenet0.25", 32),
                                        ("mobilenetv2_0.25", 32), ("squeezenet1.1", 224),
                                        ("alexnet", 64), ("vgg11_bn", 32)])
def test_forward_small_inputs_hybrid_matches_imperative(name, size):
    net = _build(name, classes=7)
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).uniform(0, 1, (2, 3, size, size)).astype(np.float32))
    out = net(x)
    assert out.shape == (2, 7)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), out.asnumpy(), rtol=1e-4, atol=1e-5)


def test_small_densenet_and_resnet_thumbnail_forward():
    with mx.name.NameManager():
        dense = vision.DenseNet(16, 8, [2, 2], classes=5)
        thumb = vision.resnet18_v1(thumbnail=True, classes=5)
    for net, size in ((dense, 64), (thumb, 16)):
        net.initialize()
        out = net(mx.nd.ones((1, 3, size, size)))
        assert out.shape == (1, 5) and np.isfinite(out.asnumpy()).all()
    assert thumb.collect_params()["resnetv10_conv0_weight"].shape == (64, 3, 3, 3)


def test_pretrained_refused_without_local_file(tmp_path):
    with pytest.raises(mx.MXNetError, match="does not download"):
        vision.resnet18_v1(pretrained=True, root=str(tmp_path))
    with pytest.raises(ValueError, match="not available"):
        model_store.get_model_file("resnet19_v1", root=str(tmp_path))
    bad = tmp_path / ("resnet18_v1-%s.params" % model_store.short_hash("resnet18_v1"))
    bad.write_bytes(b"not MXNet's file")
    with pytest.raises(mx.MXNetError, match="do not match"):
        vision.get_model("resnet18_v1", pretrained=True, root=str(tmp_path))


def _sha1(path):
    import hashlib
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


@pytest.mark.parametrize("zipped", [False, True])
def test_pretrained_loads_from_local_store(tmp_path, monkeypatch, zipped):
    source = _build("squeezenet1.1")
    source.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(1).uniform(0, 1, (1, 3, 224, 224)).astype(np.float32))
    expected = source(x).asnumpy()
    path = str(tmp_path / "weights.params")
    source.save_parameters(path)
    monkeypatch.setitem(model_store._model_sha1, "squeezenet1.1", _sha1(path))
    file_name = "squeezenet1.1-%s.params" % model_store.short_hash("squeezenet1.1")
    if zipped:
        with zipfile.ZipFile(str(tmp_path / (file_name[:-7] + ".zip")), "w") as zf:
            zf.write(path, file_name)
    else:
        os.rename(path, str(tmp_path / file_name))
    with mx.name.NameManager():
        net = vision.get_model("squeezenet1.1", pretrained=True, root=str(tmp_path),
                               ctx=mx.cpu())
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    model_store.purge(str(tmp_path))
    assert not [f for f in os.listdir(str(tmp_path)) if f.endswith(".params")]


def test_legacy_prefixed_parameter_files_load_by_name(tmp_path):
    """MXNet's older files store prefix-stripped names (conv0_weight, stage1_conv0_weight)."""
    source = _build("resnet18_v1", classes=4)
    source.initialize()
    x = mx.nd.array(np.random.RandomState(2).uniform(0, 1, (1, 3, 32, 32)).astype(np.float32))
    expected = source(x).asnumpy()
    path = str(tmp_path / "legacy.params")
    source.collect_params().save(path, strip_prefix=source.prefix)
    assert "stage2_conv2_weight" in mx.nd.load(path)
    other = vision.resnet18_v1(classes=4, prefix="renamed_")
    other.load_parameters(path)
    np.testing.assert_allclose(other(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(os.environ.get("NANOMX_SLOW_TESTS") != "1",
                    reason="set NANOMX_SLOW_TESTS=1 to run every model at full size")
@pytest.mark.parametrize("name", ALL_MODELS)
def test_every_model_forward_full_size(name):
    net = _build(name)
    net.initialize()
    size = _input_size(name)
    out = net(mx.nd.random.uniform(shape=(1, 3, size, size)))
    assert out.shape == (1, 1000) and np.isfinite(out.asnumpy()).all()
