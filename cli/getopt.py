"""sbatch's, salloc's and srun's option tables (long and short options, their arity) and getopt_long as
Slurm's clients call it: the same permutation, abbreviations and error messages."""

from __future__ import annotations

from ..common.grammar import (
    OptError,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs start-up time
    from collections.abc import Iterator

NO_ARG, REQUIRED_ARG, OPTIONAL_ARG = 0, 1, 2
_ARITY = {"N": NO_ARG, "R": REQUIRED_ARG, "O": OPTIONAL_ARG}

# Long options in getopt's table order (the order of the "possibilities" in ambiguity messages),
# as listed by the real binaries.  `name:K` or `name:K=key` (an alias sharing key and arity).
_SBATCH_LONG = """
account:R acctg-freq:R array:R batch:R begin:R bb:R bbf:R cluster-constraint:R chdir:R cluster:R=clusters
clusters:R comment:R container:R context:R contiguous:N constraint:R core-spec:R cores-per-socket:R
cpu-freq:R cpus-per-gpu:R cpus-per-task:R deadline:R delay-boot:R dependency:R distribution:R error:R
exclude:R exclusive:O export:R export-file:R extra-node-info:R get-user-env:O gid:R gpu-bind:R gpu-freq:R
gpus:R gpus-per-node:R gpus-per-socket:R gpus-per-task:R gres:R gres-flags:R help:N hint:R hold:N
ignore-pbs:N input:R job-name:R kill-on-invalid-dep:R licenses:R mail-type:R mail-user:R mcs-label:R mem:R
mem-bind:R mem-per-cpu:R mem-per-gpu:R mincpus:R network:R nice:O no-kill:O no-requeue:N nodefile:R
nodelist:R nodes:R ntasks:R ntasks-per-core:R ntasks-per-gpu:R ntasks-per-node:R ntasks-per-socket:R
ntasks-per-tres:R open-mode:R output:R overcommit:N oversubscribe:N parsable:N partition:R power:R prefer:R
priority:R profile:R propagate:O qos:R quiet:N reboot:N requeue:N reservation:R signal:R sockets-per-node:R
spread-job:N switches:R tasks-per-node:R=ntasks-per-node test-only:N thread-spec:R threads-per-core:R time:R
time-min:R tmp:R uid:R use-min-nodes:N usage:N verbose:N version:N wait:N wait-all-nodes:R wckey:R wrap:R
"""
_SBATCH_SHORT = """
a=array A=account b=begin B=extra-node-info c=cpus-per-task C=constraint d=dependency D=chdir e=error
F=nodefile G=gpus h=help H=hold i=input J=job-name k=no-kill L=licenses m=distribution M=clusters n=ntasks
N=nodes o=output O=overcommit p=partition q=qos Q=quiet s=oversubscribe S=core-spec t=time v=verbose
V=version W=wait w=nodelist x=exclude
"""
_SRUN_LONG = """
accel-bind:R account:R acctg-freq:R bcast:O bcast-exclude:R begin:R bb:R bbf:R cluster-constraint:R chdir:R
cluster:R=clusters clusters:R comment:R compress:O container:R context:R contiguous:N constraint:R
core-spec:R cores-per-socket:R cpu-bind:R cpu_bind:R=cpu-bind cpu-freq:R cpus-per-gpu:R cpus-per-task:R
deadline:R debugger-test:N delay-boot:R dependency:R disable-status:N distribution:R epilog:R error:R exact:N
exclude:R exclusive:O export:R extra-node-info:R gid:R gpu-bind:R gpu-freq:R gpus:R gpus-per-node:R
gpus-per-socket:R gpus-per-task:R gres:R gres-flags:R help:N het-group:R hint:R hold:N immediate:O input:R
interactive:N jobid:R job-name:R kill-on-bad-exit:O label:N licenses:R mail-type:R mail-user:R mcs-label:R
mem:R mem-bind:R mem-per-cpu:R mem-per-gpu:R mincpus:R mpi:R msg-timeout:R multi-prog:N network:R nice:O
no-allocate:N no-kill:O nodefile:R nodelist:R nodes:R ntasks:R ntasks-per-core:R ntasks-per-gpu:R
ntasks-per-node:R ntasks-per-socket:R ntasks-per-tres:R open-mode:R output:R overcommit:N overlap:O
oversubscribe:N pack-group:R=het-group partition:R power:R prefer:R preserve-env:N priority:R profile:R
prolog:R propagate:O pty:N qos:R quiet:N quit-on-interrupt:N reboot:N relative:R reservation:R resv-ports:O
send-libs:O signal:R slurmd-debug:R sockets-per-node:R spread-job:N switches:R threads:R task-epilog:R
task-prolog:R tasks-per-node:R=ntasks-per-node test-only:N thread-spec:R threads-per-core:R time:R
time-min:R tmp:R uid:R unbuffered:N use-min-nodes:N usage:N verbose:N version:N wait:R wckey:R whole:N x11:O
"""
_SRUN_SHORT = """
b=begin c=cpus-per-task d=dependency e=error h=help i=input k=no-kill l=label m=distribution n=ntasks
o=output p=partition q=qos r=relative s=oversubscribe t=time u=unbuffered v=verbose w=nodelist x=exclude
A=account B=extra-node-info C=constraint D=chdir E=preserve-env F=nodefile G=gpus H=hold I=immediate
J=job-name K=kill-on-bad-exit L=licenses M=clusters N=nodes O=overcommit Q=quiet S=core-spec T=threads
V=version W=wait X=disable-status Z=no-allocate
"""
_SALLOC_LONG = """
account:R acctg-freq:R begin:R bell:N bb:R bbf:R chdir:R cluster:R=clusters clusters:R cluster-constraint:R
comment:R container:R contiguous:N constraint:R core-spec:R cores-per-socket:R cpu-freq:R cpus-per-gpu:R
cpus-per-task:R deadline:R delay-boot:R dependency:R distribution:R exclude:R exclusive:O extra-node-info:R
get-user-env:O gid:R gpu-bind:R gpu-freq:R gpus:R gpus-per-node:R gpus-per-socket:R gpus-per-task:R gres:R
gres-flags:R help:N hint:R hold:N immediate:O job-name:R kill-command:O licenses:R mail-type:R mail-user:R
mcs-label:R mem:R mem-bind:R mem-per-cpu:R mem-per-gpu:R mincpus:R network:R nice:O no-bell:N no-kill:O
no-shell:N nodefile:R nodelist:R nodes:R ntasks:R ntasks-per-core:R ntasks-per-gpu:R ntasks-per-node:R
ntasks-per-socket:R overcommit:N oversubscribe:N partition:R power:R prefer:R priority:R profile:R qos:R
quiet:N reboot:N reservation:R signal:R sockets-per-node:R spread-job:N switches:R
tasks-per-node:R=ntasks-per-node thread-spec:R threads-per-core:R time:R time-min:R tmp:R uid:R usage:N
use-min-nodes:N verbose:N version:N wait-all-nodes:R wckey:R x11:O
"""
_SALLOC_SHORT = """
A=account b=begin B=extra-node-info c=cpus-per-task C=constraint d=dependency D=chdir F=nodefile G=gpus
h=help H=hold I=immediate J=job-name k=no-kill K=kill-command L=licenses m=distribution M=clusters n=ntasks
N=nodes O=overcommit p=partition q=qos Q=quiet s=oversubscribe S=core-spec t=time v=verbose V=version
w=nodelist x=exclude
"""


class Table:
    """A getopt_long table: long options in order, exact-name index, short letters."""

    __slots__ = ("longs", "exact", "shorts")

    def __init__(self, longs: str, shorts: str):
        self.longs: list[tuple[str, int, str]] = []
        for item in longs.split():
            name, _, rest = item.partition(":")
            arity, _, key = rest.partition("=")
            self.longs.append((name, _ARITY[arity], key or name))
        self.exact = {name: (name, arity, key) for name, arity, key in self.longs}
        by_key = {key: arity for _, arity, key in self.longs}
        self.shorts: dict[str, tuple[int, str]] = {}
        for item in shorts.split():
            ch, _, key = item.partition("=")
            self.shorts[ch] = (by_key[key], key)


_TABLES: dict[str, Table] = {}


def table(kind: str) -> Table:
    t = _TABLES.get(kind)
    if t is None:
        longs, shorts = {"sbatch": (_SBATCH_LONG, _SBATCH_SHORT), "salloc": (_SALLOC_LONG, _SALLOC_SHORT)}.get(
            kind, (_SRUN_LONG, _SRUN_SHORT))
        t = _TABLES[kind] = Table(longs, shorts)
    return t


def _getopt_error(prog: str, msg: str) -> OptError:
    return OptError([f"{prog}: {msg}", f'Try "{prog} --help" for more information'], 255)


class Getopt:
    """GNU getopt_long with a leading '+' (stop at the first non-option), yielding
    (key, value, option-as-written) one option at a time so that value errors and syntax
    errors come out in command-line order; `optind` is the first non-option afterwards."""

    def __init__(self, prog: str, argv: list[str], table: Table):
        self.prog, self.argv, self.table = prog, argv, table
        self.optind = 0

    def __iter__(self) -> Iterator[tuple[str, str | None, str]]:
        argv, n, prog = self.argv, len(self.argv), self.prog
        i = 0
        while i < n:
            a = argv[i]
            if a == "--":
                i += 1
                break
            if len(a) < 2 or a[0] != "-":
                break
            if a[1] == "-":
                i, item = self._long(a, i)
                yield item
                i += 1
                continue
            j = 1
            while j < len(a):
                ch = a[j]
                spec = self.table.shorts.get(ch)
                if spec is None:
                    raise _getopt_error(prog, f"invalid option -- '{ch}'")
                arity, key = spec
                if arity == NO_ARG:
                    yield key, None, "-" + ch
                    j += 1
                    continue
                val: str | None = a[j + 1:]
                if not val:
                    if arity == OPTIONAL_ARG:
                        val = None
                    elif i + 1 < n:
                        i += 1
                        val = argv[i]
                    else:
                        raise _getopt_error(prog, f"option requires an argument -- '{ch}'")
                yield key, val, "-" + ch
                break
            i += 1
        self.optind = i

    def _long(self, a: str, i: int) -> tuple[int, tuple[str, str | None, str]]:
        prog = self.prog
        body = a[2:]
        name, eq, val = body.partition("=")
        spec = self.table.exact.get(name)
        if spec is None:
            cands = [o for o in self.table.longs if o[0].startswith(name)]
            if not cands:
                raise _getopt_error(prog, f"unrecognized option '--{body}'")
            first = cands[0]
            ambiguous = [first] + [o for o in cands[1:] if (o[1], o[2]) != (first[1], first[2])]
            if len(ambiguous) > 1:
                raise _getopt_error(prog, f"option '--{body}' is ambiguous; possibilities:"
                                    + "".join(f" '--{o[0]}'" for o in ambiguous))
            spec = first
        full, arity, key = spec
        if arity == NO_ARG:
            if eq:
                raise _getopt_error(prog, f"option '--{full}' doesn't allow an argument")
            return i, (key, None, "--" + full)
        if eq:
            return i, (key, val, "--" + full)
        if arity == OPTIONAL_ARG:
            return i, (key, None, "--" + full)
        if i + 1 >= len(self.argv):
            raise _getopt_error(prog, f"option '--{full}' requires an argument")
        return i + 1, (key, self.argv[i + 1], "--" + full)
