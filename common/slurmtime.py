"""Slurm 22.05's time forms: time limits (`-t`), elapsed times, and `--begin`/`--deadline` dates
(`now+1hour`, `16:00`, `2026-12-03T10:00`, `tomorrow`, ...), parsed as the real sbatch parses them."""

from __future__ import annotations

from .grammar import (
    CSPACE,
    INFINITE32,
    LONG_MAX,
    NO_VAL32,
    OptError,
    cdiv,
    char_at,
    int32,
    isdig,
    opt_error,
    strtol,
)


# ====================================================================== time limits
def _is_valid_timespec(s: str) -> bool:
    digit = dash = colon = 0
    in_digit = False
    for c in s:
        if "0" <= c <= "9":
            if not in_digit:
                digit += 1
                in_digit = True
        elif c == "-":
            in_digit = False
            dash += 1
            if colon:
                return False
        elif c == ":":
            in_digit = False
            colon += 1
        else:
            return False
    if not digit or dash > 1 or colon > 2:
        return False
    if dash:
        return not ((colon == 1 and digit < 3) or (colon == 2 and digit < 4))
    return not ((colon == 1 and digit < 2) or (colon == 2 and digit < 3))


def _sscanf_ints(s: str, seps: str) -> list[int]:
    """C `sscanf(s, "%d<sep0>%d<sep1>%d...")` on a string of digits, '-' and ':' only:
    the integers converted before the first mismatch (each cast to int)."""
    out: list[int] = []
    i = 0
    for k in range(len(seps) + 1):
        v, end = strtol(s, i)
        if end == i:
            break
        out.append(int32(v))
        i = end
        if k == len(seps) or i >= len(s) or s[i] != seps[k]:
            break
        i += 1
    return out


def time_str2secs(s: str) -> int:
    """Slurm's time_str2secs in C int arithmetic: seconds, INFINITE32 or NO_VAL32."""
    if not s:
        return NO_VAL32
    if s.lower() in ("-1", "infinite", "unlimited"):
        return INFINITE32
    if not _is_valid_timespec(s):
        return NO_VAL32
    d = h = m = sec = 0
    if "-" in s:
        vals = _sscanf_ints(s, "-::") + [0, 0, 0, 0]
        d, h, m, sec = vals[:4]
        d, h, m = int32(d * 86400), int32(h * 3600), int32(m * 60)
    else:
        vals = _sscanf_ints(s, "::")
        if len(vals) == 3:
            h, m, sec = int32(vals[0] * 3600), int32(vals[1] * 60), vals[2]
        else:
            vals += [0, 0]
            m, sec = int32(vals[0] * 60), vals[1]
    return int32(d + h + m + sec)


def _time_str2mins(s: str) -> int:
    i = time_str2secs(s)
    if i not in (INFINITE32, NO_VAL32):
        i = cdiv(int32(i + 59), 60)
    return i


def parse_time(value: str, prog: str = "sbatch", *, option: str = "--time") -> int | None:
    """`-t/--time` as sbatch reads it (time_str2mins): whole minutes, or None for no limit.

    Forms: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`; seconds round up to a minute;
    `UNLIMITED`, `INFINITE`, `-1` and `0` mean no limit.  Anything else raises
    `"<prog>: error: Invalid --time specification"` (exit 255).

    Slurm also accepts a negative day count (`--time=-5`) and C int overflows; the job then
    shows an INVALID limit and is never killed for time.  slurmlet has no INVALID limit, so
    those results (negative minutes) come back as None (no limit) too.
    """
    mins = _time_str2mins(value)
    if mins == NO_VAL32:
        raise opt_error(prog, f"Invalid {option} specification", 255)
    if mins == 0 or mins < 0:
        return None
    return mins


def format_time_hms(minutes: int | None) -> str:
    """Slurm's mins2time_str (scontrol TimeLimit=, sbatch -v): `00:10:00`, `1-00:00:00`, UNLIMITED."""
    return "UNLIMITED" if minutes is None else format_secs_hms(int(minutes) * 60)


# ====================================================================== --begin / --deadline
class _TimeProb(Exception):
    def __init__(self, pos: int):
        super().__init__(pos)
        self.pos = pos


_UNITS = (("seconds", 1), ("second", 1), ("minutes", 60), ("minute", 60), ("hours", 3600), ("hour", 3600),
          ("days", 86400), ("day", 86400), ("weeks", 604800), ("week", 604800))


def _get_delta(s: str, pos: int) -> tuple[int, int]:
    """(new pos, delta seconds) for the text after '+'/'-' in `now+N[units]`."""
    cnt = digit = 0
    off = pos + 1
    while char_at(s, off) not in ("\0", "\n"):
        c = s[off]
        if c in CSPACE:
            off += 1
            continue
        low = s[off:off + 7].lower()
        unit = next(((n, m) for n, m in _UNITS if low.startswith(n)), None)
        if unit:
            off += len(unit[0])
            cnt *= unit[1]
            break
        if isdig(c):
            cnt = cnt * 10 + ord(c) - 48
            digit += 1
            off += 1
            continue
        raise _TimeProb(off - 1)
    if not digit:
        raise _TimeProb(pos)
    return off - 1, cnt


def _two_digits(s: str, off: int, top: int) -> tuple[int, int]:
    """Exactly two digits at `off`, at most `top` (minutes, seconds) -> (value, next offset)."""
    for k in (off, off + 1):
        if not isdig(char_at(s, k)):
            raise _TimeProb(k)
    v = (ord(s[off]) - 48) * 10 + ord(s[off + 1]) - 48
    if v > top:
        raise _TimeProb(off)
    return v, off + 2


def _get_time(s: str, pos: int) -> tuple[int, int, int, int]:
    """`HH:MM[:SS] [AM|PM]` at pos -> (last pos, hour, minute, second)."""
    off = pos
    if not isdig(char_at(s, off)):
        raise _TimeProb(off)
    hr = ord(s[off]) - 48
    off += 1
    if char_at(s, off) != ":":
        if not isdig(char_at(s, off)):
            raise _TimeProb(off)
        hr = hr * 10 + ord(s[off]) - 48
        off += 1
    if hr > 23:
        raise _TimeProb(off - 2)
    if char_at(s, off) != ":":
        raise _TimeProb(off)
    mn, off = _two_digits(s, off + 1, 59)
    sec = 0
    if char_at(s, off) == ":":
        sec, off = _two_digits(s, off + 1, 59)
    while char_at(s, off) in CSPACE and char_at(s, off) != "\0":
        off += 1
    ampm = s[off:off + 2].lower()
    if ampm == "pm":
        hr += 12
        if hr > 23:
            if hr != 24:
                raise _TimeProb(off)
            hr = 12
        off += 2
    elif ampm == "am":
        if hr > 11:
            if hr != 12:
                raise _TimeProb(off)
            hr = 0
        off += 2
    return off - 1, hr, mn, sec


def _get_date(s: str, pos: int) -> tuple[int, int, int, int]:
    """`YYYY-MM-DD`, `MMDD[YY]`, `MM/DD[/YY]`, `MM.DD[.YY]` -> (last pos, month0, mday, year-1900 or -1)."""
    off = pos
    if len(s) >= off + 7 and char_at(s, off + 4) == "-" and char_at(s, off + 7) == "-":
        yr = 0
        for _ in range(4):
            if not isdig(char_at(s, off)):
                raise _TimeProb(off)
            yr = yr * 10 + ord(s[off]) - 48
            off += 1
        off += 1
        mon = ord(char_at(s, off)) - 48
        off += 1
        if isdig(char_at(s, off)):
            mon = mon * 10 + ord(s[off]) - 48
            off += 1
        if mon < 1 or mon > 12:
            raise _TimeProb(off - 2)
        off += 1
        if not isdig(char_at(s, off)):
            raise _TimeProb(off)
        day = ord(s[off]) - 48
        off += 1
        if isdig(char_at(s, off)):
            day = day * 10 + ord(s[off]) - 48
            off += 1
        if day < 1 or day > 31:
            raise _TimeProb(off - 2)
        return off - 1, mon - 1, day, yr - 1900
    mon = ord(char_at(s, off)) - 48
    off += 1
    if isdig(char_at(s, off)):
        mon = mon * 10 + ord(s[off]) - 48
        off += 1
    if mon < 1 or mon > 12:
        raise _TimeProb(off - 2)
    if char_at(s, off) in "./" and char_at(s, off) != "\0":
        off += 1
    if not isdig(char_at(s, off)):
        raise _TimeProb(off)
    day = ord(s[off]) - 48
    off += 1
    if isdig(char_at(s, off)):
        day = day * 10 + ord(s[off]) - 48
        off += 1
    if day < 1 or day > 31:
        raise _TimeProb(off - 2)
    if char_at(s, off) in "./" and char_at(s, off) != "\0":
        off += 1
    year = -1
    if isdig(char_at(s, off)):
        yr = ord(s[off]) - 48
        off += 1
        if not isdig(char_at(s, off)):
            raise _TimeProb(off)
        yr = yr * 10 + ord(s[off]) - 48
        off += 1
        if yr:
            year = yr + 100
    return off - 1, mon - 1, day, year


def _slurm_parse_time(s: str, now: float, past: bool = False) -> int:
    """Slurm's parse_time(): an epoch, 0 when nothing was specified; raises _TimeProb(pos)."""
    import time
    if s[:3].lower() == "uts":
        v, end = strtol(s, 3)
        if v < 1000000 or v == LONG_MAX or end != len(s):
            raise _TimeProb(0)
        return v
    tnow = int(now)
    lt = time.localtime(tnow)
    hour = minute = month = mday = year = -1
    second = 0
    pos = 0
    while char_at(s, pos) not in ("\0", "\n"):
        c = s[pos]
        low = s[pos:pos + 8].lower()
        if c in " \t-T":
            pass
        elif low.startswith("today"):
            month, mday, year = lt.tm_mon - 1, lt.tm_mday, lt.tm_year - 1900
            pos += 4
        elif low.startswith("tomorrow"):
            tm = time.localtime(tnow + 86400)
            month, mday, year = tm.tm_mon - 1, tm.tm_mday, tm.tm_year - 1900
            pos += 7
        elif low.startswith(("midnight", "noon", "fika", "teatime")):
            word = next(w for w in ("midnight", "noon", "fika", "teatime") if low.startswith(w))
            hour, minute, second = {"midnight": 0, "noon": 12, "fika": 15, "teatime": 16}[word], 0, 0
            pos += len(word) - 1
        elif low.startswith("now"):
            delta = 0
            i = pos + 3
            while True:
                c2 = char_at(s, i)
                if c2 in "+-" and c2 != "\0":
                    pos += i
                    pos, delta = _get_delta(s, pos)
                    if c2 == "-":
                        delta = -delta
                    break
                if c2 in " \t" and c2 != "\0":
                    i += 1
                    continue
                if c2 in ("\0", "\n"):
                    pos += i - 1
                    break
                raise _TimeProb(pos + i)
            tm = time.localtime(tnow + delta)
            month, mday, year = tm.tm_mon - 1, tm.tm_mday, tm.tm_year - 1900
            hour, minute, second = tm.tm_hour, tm.tm_min, tm.tm_sec
        elif not isdig(c):
            raise _TimeProb(pos)
        elif char_at(s, pos + 1) == ":" or char_at(s, pos + 2) == ":":
            pos, hour, minute, second = _get_time(s, pos)
        else:
            pos, month, mday, y = _get_date(s, pos)
            if y != -1:
                year = y
        pos += 1
    if hour == -1 and month == -1:
        return 0
    if hour == -1:
        hour, minute = 0, 0
    elif month == -1:
        if past or hour > lt.tm_hour or (hour == lt.tm_hour and minute > lt.tm_min):
            month, mday, year = lt.tm_mon - 1, lt.tm_mday, lt.tm_year - 1900
        else:
            tm = time.localtime(tnow + 86400)
            month, mday, year = tm.tm_mon - 1, tm.tm_mday, tm.tm_year - 1900
    if year == -1:
        cur = (lt.tm_mon - 1, lt.tm_mday, lt.tm_hour, lt.tm_min)
        if past:
            year = lt.tm_year - 1900 - (1 if month > cur[0] else 0)
        elif (month, mday, hour, minute) > cur:
            year = lt.tm_year - 1900
        else:
            year = lt.tm_year - 1900 + 1
    try:
        return int(time.mktime((year + 1900, month + 1, mday, hour, minute, second, 0, 0, -1)))
    except (OverflowError, ValueError):
        raise _TimeProb(pos) from None


def parse_date(value: str, now: float | None = None, *, past: bool = False) -> int:
    """Slurm's parse_time() as its callers see it: an epoch in local time, 0 where the value names no
    time at all (empty, blanks only).  A refusal raises OptError with parse_time's own line,
    `Invalid time specification (pos=N): VALUE` (each caller adds its own after it, or none: sacct).
    `past` is sacct's reading: a time without a date is the last one past, a date without a year
    this year's unless that is still to come."""
    import time
    try:
        return _slurm_parse_time(value, time.time() if now is None else now, past)
    except _TimeProb as p:
        raise OptError([f"Invalid time specification (pos={p.pos}): {value}"], 1) from None


def parse_begin(value: str, now: float | None = None, *, prog: str = "sbatch", option: str = "--begin",
                past: bool = False) -> float:
    """`--begin`/`--deadline` as Slurm's parse_time(): an epoch (seconds) in local time.

    Forms (case-insensitive, combinable, separated by blanks, `-` or `T`):
    `now[+-]N[seconds|second|minutes|minute|hours|hour|days|day|weeks|week]` (no other unit
    spellings: `now+1h` is refused), `HH:MM[:SS][ ][AM|PM]` (today, or tomorrow once passed),
    `YYYY-MM-DD[THH:MM[:SS]]`, `YYYY-MM-DD-HH:MM:SS`, `MMDD[YY]`, `MM/DD[/YY]`, `MM.DD[.YY]`,
    `midnight`, `noon`, `fika` (15:00), `teatime` (16:00), `today`, `tomorrow`, `utsEPOCH`
    (`elevenses` is not a 22.05 word).  `now` is injectable (default: the clock).
    Refusals print Slurm's two lines, `Invalid time specification (pos=N): VALUE` and
    `<prog>: error: Invalid --begin specification` (exit 255).
    """
    try:
        t = parse_date(value, now, past=past)
    except OptError as e:
        raise OptError([*e.lines, f"{prog}: error: Invalid {option} specification"], 255) from None
    if not t:
        raise opt_error(prog, f"Invalid {option} specification", 255)
    return float(t)


# ====================================================================== display forms
def dhms(secs: int) -> tuple[int, int, int, int]:
    """Split seconds into days, hours, minutes, seconds."""
    return secs // 86400, secs // 3600 % 24, secs // 60 % 60, secs % 60


def fmt_secs_short(secs: float | int) -> str:
    """squeue/sinfo ``_print_secs``: ``0:04``, ``1:02:03``, ``1-00:00:00``; ``INVALID`` when absurd."""
    secs = int(secs)
    if secs < 0 or secs > 365 * 24 * 3600:
        return "INVALID"
    d, h, m, s = dhms(secs)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}"


def fmt_secs_long(secs: float | int) -> str:
    """``secs2time_str``: ``00:00:05``, ``1-00:00:00`` (sacct Elapsed, scontrol RunTime)."""
    secs = max(int(secs), 0)
    d, h, m, s = dhms(secs)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    return f"{h:02d}:{m:02d}:{s:02d}"


def fmt_mins_long(mins: int | None) -> str:
    """``mins2time_str``: ``UNLIMITED`` for no limit, else ``00:10:00`` / ``1-00:00:00``."""
    if mins is None:
        return "UNLIMITED"
    return fmt_secs_long(int(mins) * 60)


def fmt_limit_short(mins: int | None) -> str:
    """squeue ``%l``: ``UNLIMITED``, ``10:00``, ``1:00:00``, ``1-00:00:00``."""
    if mins is None:
        return "UNLIMITED"
    return fmt_secs_short(int(mins) * 60)


def format_time(minutes: int | None) -> str:
    """A time limit as squeue shows it: `UNLIMITED`, `10:00`, `1:00:00`, `1-00:00:00`
    (`INVALID` when negative or longer than 365 days, as squeue prints)."""
    return fmt_limit_short(minutes)


def format_elapsed(seconds: float) -> str:
    """squeue's TIME column: `0:04`, `1:02:03`, `2-01:00:00` (`INVALID` past 365 days)."""
    return fmt_secs_short(seconds)


def format_secs_hms(seconds: float | None) -> str:
    """Slurm's secs2time_str (scontrol RunTime=): `00:00:05`, `1-02:03:04`, UNLIMITED for None."""
    if seconds is None:
        return "UNLIMITED"
    if int(seconds) < 0:
        return "INVALID"
    return fmt_secs_long(seconds)


