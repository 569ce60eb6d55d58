"""GNU getopt_long for the query commands (squeue, sinfo, sacct, scancel): options in any order,
unique long-option prefixes, `--opt=value`, clustered short options, getopt's error texts."""

from __future__ import annotations


class UsageError(Exception):
    """An option error; `lines` are what the command prints on stderr."""

    def __init__(self, lines: list[str], code: int = 1):
        super().__init__("\n".join(lines))
        self.lines = lines
        self.code = code


# An option: (short letter or "", long name or "", arity, key). arity: 0 flag, 1 required, 2 optional.
Opt = tuple[str, str, int, str]


def parse(prog: str, argv: list[str], table: list[Opt], *, help_hint: bool = True, code: int = 1,
          stop_at_positional: bool = False) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Returns ([(key, value)] in command-line order, positional arguments).

    `stop_at_positional` is getopt's leading '+': everything from the first non-option on
    (a script and its arguments, a command) is positional.
    """
    shorts = {o[0]: o for o in table if o[0]}
    longs = {o[1]: o for o in table if o[1]}
    out: list[tuple[str, str | None]] = []
    pos: list[str] = []
    hint = [f'Try "{prog} --help" for more information'] if help_hint else []
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "--":
            pos.extend(argv[i:])
            break
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            opt = longs.get(name)
            if opt is None:
                # glibc: the first prefix match wins unless another one is a different option
                # (arity or key); the message lists the first and those, and repeats the argument
                # as typed (`--j=1`)
                cands = [longs[n] for n in longs if n.startswith(name)]
                if not cands:
                    raise UsageError([f"{prog}: unrecognized option '{a}'"] + hint, code)
                opt = cands[0]
                alts = [opt] + [c for c in cands[1:] if (c[2], c[3]) != (opt[2], opt[3])]
                if len(alts) > 1:
                    listed = " ".join(f"'--{c[1]}'" for c in alts)
                    raise UsageError([f"{prog}: option '{a}' is ambiguous; possibilities: {listed}"] + hint, code)
            if opt[2] == 0:
                if eq:
                    raise UsageError([f"{prog}: option '--{opt[1]}' doesn't allow an argument"] + hint, code)
                out.append((opt[3], None))
            elif eq:
                out.append((opt[3], val))
            elif opt[2] == 2:
                out.append((opt[3], None))
            elif i < len(argv):
                out.append((opt[3], argv[i]))
                i += 1
            else:
                raise UsageError([f"{prog}: option '--{opt[1]}' requires an argument"] + hint, code)
            continue
        if a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                ch = a[j]
                opt = shorts.get(ch)
                if opt is None:
                    raise UsageError([f"{prog}: invalid option -- '{ch}'"] + hint, code)
                if opt[2] == 0:
                    out.append((opt[3], None))
                    j += 1
                    continue
                rest = a[j + 1:]
                if rest:
                    out.append((opt[3], rest))
                elif opt[2] == 2:
                    out.append((opt[3], None))
                elif i < len(argv):
                    out.append((opt[3], argv[i]))
                    i += 1
                else:
                    raise UsageError([f"{prog}: option requires an argument -- '{ch}'"] + hint, code)
                break
            continue
        pos.append(a)
        if stop_at_positional:
            pos.extend(argv[i:])
            break
    return out, pos
