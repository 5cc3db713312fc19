"""Launches a distributed job: ``python3 -m nanomx.tools.launch -n WORKERS [-s SERVERS]
[--launcher local|mpi] [-H HOSTFILE] [--env NAME[=VALUE]] COMMAND...`` (MXNet's tools/launch.py
options; docs/kvstore.md).

Both launchers run one Open MPI job with ``mpirun``: ranks 0..W-1 are workers (DMLC_ROLE=worker)
and ranks W..W+S-1 servers (DMLC_ROLE=server), all running COMMAND. ``local`` runs every rank on
this host; ``mpi`` places them with the hostfile. The exit status is mpirun's: non-zero when any
rank failed, and a rank that dies ends the whole job.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

# Forwarded to every rank on other hosts (a local job inherits the whole environment anyway).
_FORWARDED_PREFIXES = ("NANOMX_", "MXNET_", "DMLC_", "PYTHON", "OMP_", "LD_LIBRARY_PATH", "PATH")


def build_command(args, command, mpirun="mpirun"):
    """The mpirun command line for `args` (argparse namespace) running `command` (a list)."""
    workers = args.num_workers
    servers = args.num_servers if args.num_servers is not None else workers
    if workers < 1:
        raise ValueError("launch: -n (workers) must be at least 1, got %d" % workers)
    if servers < 1:
        raise ValueError("launch: -s (servers) must be at least 1, got %d" % servers)
    if args.launcher == "mpi" and not args.hostfile:
        raise ValueError("launch: --launcher mpi needs a hostfile (-H FILE); use --launcher local "
                         "to run every rank on this host")
    cmd = [mpirun, "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if args.hostfile:
        cmd += ["--hostfile", args.hostfile]
    env = ["DMLC_NUM_WORKER=%d" % workers, "DMLC_NUM_SERVER=%d" % servers] + list(args.env)
    # The settings go through `env` in each app context (mpirun's -x reaches only the first).
    assigned = [item if "=" in item else "%s=%s" % (item, os.environ.get(item, ""))
                for item in env]
    if args.hostfile:
        named = {item.split("=", 1)[0] for item in assigned}
        for name in sorted(os.environ):
            if name.startswith(_FORWARDED_PREFIXES) and name not in named:
                assigned.append("%s=%s" % (name, os.environ[name]))
    cmd += ["-n", str(workers), "env", "DMLC_ROLE=worker"] + assigned + command
    cmd += [":", "-n", str(servers), "env", "DMLC_ROLE=server"] + assigned + command
    return cmd


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m nanomx.tools.launch",
        description="Launch a distributed nanomx job (workers and servers) with Open MPI.")
    parser.add_argument("-n", "--num-workers", required=True, type=int,
                        help="number of worker processes")
    parser.add_argument("-s", "--num-servers", type=int,
                        help="number of server processes (default: the number of workers)")
    parser.add_argument("-H", "--hostfile", type=str,
                        help="an Open MPI hostfile: the hosts to run on (one per line, 'host "
                             "slots=N')")
    parser.add_argument("--launcher", type=str, default="local", choices=["local", "mpi"],
                        help="local: every rank on this host; mpi: on the hostfile's hosts")
    parser.add_argument("--env", action="append", default=[],
                        help="NAME=VALUE to set, or NAME to forward, on every rank (repeatable)")
    parser.add_argument("--dry-run", action="store_true", help="print the mpirun command only")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command every rank runs")
    args, unknown = parser.parse_known_args(argv)
    command = args.command + unknown
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        parser.error("no command to run")
    mpirun = shutil.which("mpirun")
    if mpirun is None and not args.dry_run:
        sys.exit("launch: mpirun not found: install Open MPI (Debian: openmpi-bin)")
    try:
        cmd = build_command(args, command, mpirun or "mpirun")
    except ValueError as error:
        parser.error(str(error))
    if args.dry_run:
        print(" ".join(shlex.quote(c) for c in cmd))
        return 0
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
