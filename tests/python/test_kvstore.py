"""mx.kv in one process (local and device stores), its errors, and the launcher's command line
(the distributed stores are tested under the launcher: tests/kvstore)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import nanomx as mx
from nanomx.tools import launch


@pytest.mark.parametrize("name", ["local", "device", "LOCAL"])
def test_local_init_push_pull(name):
    kv = mx.kv.create(name)
    assert kv.type == name.lower() and kv.rank == 0 and kv.num_workers == 1
    kv.init(3, mx.nd.ones((2, 3)))
    out = mx.nd.zeros((2, 3))
    kv.pull(3, out=out)
    assert np.array_equal(out.asnumpy(), np.ones((2, 3)))
    # several values for one key are summed; without an updater the sum replaces the value
    kv.push(3, [mx.nd.ones((2, 3)) * 2, mx.nd.ones((2, 3)) * 3])
    kv.pull(3, out=out)
    assert np.array_equal(out.asnumpy(), np.full((2, 3), 5.0))


def test_lists_of_keys_str_keys_and_several_outs():
    kv = mx.kv.create("local")
    kv.init(["a", "b"], [mx.nd.ones((2,)), mx.nd.zeros((2,))])
    kv.push(["a", "b"], [mx.nd.ones((2,)) * 4, mx.nd.ones((2,)) * 5])
    outs = [mx.nd.zeros((2,)), mx.nd.zeros((2,))]
    kv.pull("a", out=outs)
    b = mx.nd.zeros((2,))
    kv.pull("b", out=b)
    assert all(np.array_equal(o.asnumpy(), [4, 4]) for o in outs)
    assert np.array_equal(b.asnumpy(), [5, 5])
    kv.pushpull("a", mx.nd.ones((2,)), out=b)
    assert np.array_equal(b.asnumpy(), [1, 1])


def test_pull_is_an_engine_operation_ordered_after_the_push():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros((256, 256)))
    value = mx.nd.zeros((256, 256))
    for i in range(1, 6):
        value[:] = i  # the push below must read this value, not a later one
        kv.push(0, value)
        out = mx.nd.zeros((256, 256))
        kv.pull(0, out=out)
        value[:] = -1
        assert out.asnumpy()[0, 0] == i


def test_optimizer_runs_in_process_and_states_round_trip(tmp_path):
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones((4,)))
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))
    kv.push("w", mx.nd.ones((4,)))
    out = mx.nd.zeros((4,))
    kv.pull("w", out=out)
    assert np.allclose(out.asnumpy(), 0.9)
    path = str(tmp_path / "states")
    kv.save_optimizer_states(path)
    kv.load_optimizer_states(path)
    kv.push("w", mx.nd.ones((4,)))
    kv.pull("w", out=out)
    assert np.allclose(out.asnumpy(), 0.9 - 0.1 - 0.9 * 0.1)


def test_custom_updater_gets_key_and_arrays():
    kv = mx.kv.create("local")
    seen = []

    def updater(key, recv, stored):
        seen.append(key)
        stored[:] = stored + recv * 10

    kv._set_updater(updater)
    kv.init(7, mx.nd.ones((2,)))
    kv.init("x", mx.nd.ones((2,)))
    kv.push(7, mx.nd.ones((2,)))
    kv.push("x", mx.nd.ones((2,)))
    out = mx.nd.zeros((2,))
    kv.pull(7, out=out)
    assert np.array_equal(out.asnumpy(), [11, 11])
    assert seen == [7, "x"]


def test_updater_error_is_the_push_error():
    kv = mx.kv.create("local")
    kv.init(1, mx.nd.ones((2,)))

    def broken(key, recv, stored):
        raise ValueError("updater broke on %r" % key)

    kv._set_updater(broken)
    with pytest.raises(mx.MXNetError, match="updater broke on 1"):
        kv.push(1, mx.nd.ones((2,)))


@pytest.mark.parametrize("call, message", [
    (lambda kv: kv.init(3, mx.nd.ones((2, 3))), "duplicate init of key 3"),
    (lambda kv: kv.push(4, mx.nd.ones((2, 3))), "key 4 has not been inited"),
    (lambda kv: kv.pull(4, out=mx.nd.ones((2, 3))), "key 4 has not been inited"),
    (lambda kv: kv.pull("nokey", out=mx.nd.ones((2, 3))), "key nokey doesn't exist"),
    (lambda kv: kv.push(3, mx.nd.ones((3, 3))), "key 3 was initialised with shape (2,3)"),
    (lambda kv: kv.pull(3, out=mx.nd.ones((2, 3), dtype="float64")), "dtype float32"),
    (lambda kv: kv.push([3, "s"], [mx.nd.ones((2, 3))] * 2), "inconsistent types of keys"),
    (lambda kv: kv.row_sparse_pull(3, out=mx.nd.ones((2, 3))), "row_sparse_pull"),
    (lambda kv: kv.set_gradient_compression({"type": "2bit"}), "compression"),
    (lambda kv: kv._send_command_to_servers(0, "x"), "needs a distributed kvstore"),
])
def test_bad_input_is_a_clear_error(call, message):
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError) as info:
        call(kv)
    assert message in str(info.value)


def test_bad_types():
    with pytest.raises(TypeError, match="name must be a string"):
        mx.kv.create(3)
    with pytest.raises(mx.MXNetError, match="unknown kvstore type 'foo'"):
        mx.kv.create("foo")
    kv = mx.kv.create("local")
    with pytest.raises(TypeError, match="must be an int or a str"):
        kv.init(1.5, mx.nd.ones((1,)))
    with pytest.raises(TypeError, match="NDArray"):
        kv.init(1, np.ones((1,)))


def child_env():
    """This process's environment, with the package this test imported on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "OMPI_", "PMIX_"))}
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([package_parent, env.get("PYTHONPATH", "")])
    return env


def test_dist_outside_a_launched_job_says_how_to_launch():
    env = child_env()
    code = ("import nanomx as mx\n"
            "try:\n    mx.kv.create('dist_sync')\n"
            "except mx.MXNetError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60).stdout
    assert "nanomx.tools.launch" in out, out


def test_import_does_not_load_mpi():
    code = ("import nanomx as mx\nkv = mx.kv.create('local')\n"
            "print(any('libmpi' in l for l in open('/proc/self/maps')))\n")
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env=child_env(), timeout=60).stdout
    assert out.strip() == "False", out


def test_server_profiling_needs_a_dist_store():
    kv = mx.kv.create("local")
    with pytest.raises(mx.MXNetError, match="needs a distributed kvstore"):
        mx.profiler.set_state("run", profile_process="server")
    del kv


def command(argv):
    ns = type("Args", (), {})()
    ns.num_workers, ns.num_servers, ns.hostfile, ns.launcher, ns.env = argv
    return launch.build_command(ns, ["python3", "train.py"], mpirun="mpirun")


def test_launcher_command_line():
    cmd = command((2, None, None, "local", ["A=1"]))
    assert cmd[0] == "mpirun" and "--oversubscribe" in cmd
    assert ("--allow-run-as-root" in cmd) == (os.geteuid() == 0)
    text = " ".join(cmd)
    # -s defaults to -n; ranks 0..W-1 are workers, then the servers
    assert ("-n 2 env DMLC_ROLE=worker DMLC_NUM_WORKER=2 DMLC_NUM_SERVER=2 A=1 python3 "
            "train.py : -n 2 env DMLC_ROLE=server DMLC_NUM_WORKER=2 DMLC_NUM_SERVER=2 A=1 "
            "python3 train.py") in text, text
    cmd = command((3, 1, "hosts.txt", "mpi", []))
    assert "--hostfile hosts.txt" in " ".join(cmd) and "-n 3 env" in " ".join(cmd)
    with pytest.raises(ValueError, match="needs a hostfile"):
        command((2, 1, None, "mpi", []))
    with pytest.raises(ValueError, match="at least 1"):
        command((0, 1, None, "local", []))


def test_launcher_dry_run_prints_mpirun(capsys):
    assert launch.main(["-n", "2", "-s", "1", "--dry-run", "python3", "x.py", "--lr", "1"]) == 0
    out = capsys.readouterr().out
    assert "-n 1 env DMLC_ROLE=server DMLC_NUM_WORKER=2 DMLC_NUM_SERVER=1 python3 x.py --lr 1" \
        in out, out
