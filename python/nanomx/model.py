"""mx.model: checkpoint files as MXNet 1.x writes them — ``<prefix>-symbol.json`` (the graph)
and ``<prefix>-<epoch:04d>.params`` (mx.nd.save of ``arg:<name>`` / ``aux:<name>`` arrays)."""
from collections import namedtuple
import logging

from . import ndarray as nd
from . import symbol as sym
from .context import cpu

__all__ = ["BatchEndParam", "save_checkpoint", "load_params", "load_checkpoint"]

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Writes ``prefix-symbol.json`` (unless symbol is None) and ``prefix-%04d.params``."""
    if symbol is not None:
        symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
    save_dict = {("arg:%s" % k): v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({("aux:%s" % k): v.as_in_context(cpu()) for k, v in aux_params.items()})
    param_name = "%s-%04d.params" % (prefix, epoch)
    nd.save(param_name, save_dict)
    logging.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix, epoch):
    """(arg_params, aux_params) from ``prefix-%04d.params``; keys split at the first ':',
    other prefixes ignored."""
    param_name = "%s-%04d.params" % (prefix, epoch)
    save_dict = nd.load(param_name)
    arg_params = {}
    aux_params = {}
    if not save_dict:
        logging.warning("Params file '%s' is empty", param_name)
        return (arg_params, aux_params)
    if not isinstance(save_dict, dict):
        raise ValueError("Params file '%s' holds a list of arrays, expected named arrays "
                         "(arg:<name>, aux:<name>)" % param_name)
    for k, v in save_dict.items():
        tp, _, name = k.partition(":")
        if tp == "arg":
            arg_params[name] = v
        if tp == "aux":
            aux_params[name] = v
    return (arg_params, aux_params)


def load_checkpoint(prefix, epoch):
    """(symbol, arg_params, aux_params) of a checkpoint save_checkpoint wrote."""
    symbol = sym.load("%s-symbol.json" % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return (symbol, arg_params, aux_params)
