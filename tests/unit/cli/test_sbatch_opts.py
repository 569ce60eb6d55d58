"""sbatch/srun command lines as a user sees them (cli/opts.py, cli/argv.py).

Every expected text and exit status below is what the real Slurm 22.05.8 `sbatch`/`srun`
print (checked by running the Debian bookworm 22.05.8 clients against a slurm.conf shaped like
the reference cluster: node[1-4], GresTypes=gpu, gpu:8 per node, select/cons_tres), or is quoted
from shared/reference/slurm-formats.md.  Where slurmlet must decide something slurmctld would
decide (array, dependency, -G counts, -N 0), the text is slurmctld's refusal as sbatch prints it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmlet.cli import argv as getopt
from slurmlet.cli import opts
from slurmlet.common import grammar, patterns, slurmtime
from slurmlet.common.grammar import OptError

CWD = "/home/u/work"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "LANG": "C.UTF-8"}
WHO = dict(user="u", uid=1000, gid=1000, group="g", host="login1")
SH = "#!/bin/sh\n"
TRY = 'Try "sbatch --help" for more information'
NOT_A_SCRIPT = ["sbatch: error: This does not look like a batch script.  The first",
                "sbatch: error: line must start with #! followed by the path to an interpreter.",
                "sbatch: error: For instance: #!/bin/sh"]


def sbatch(argv: list[str], *, files: dict[str, str] | None = None, env: dict[str, str] | None = None,
           stdin: str | None = None, cwd: str = CWD, now: float | None = None) -> dict:
    """parse_sbatch over an in-memory file system (relative paths are under cwd)."""
    fs = {(p if p.startswith("/") else f"{cwd}/{p}"): text for p, text in (files or {}).items()}

    def read_file(path: str) -> str:
        if path not in fs:
            raise FileNotFoundError(path)
        return fs[path]

    return opts.parse_sbatch(argv, env=ENV if env is None else env, cwd=cwd, stdin_text=stdin,
                             read_file=read_file, now=now, **WHO)


def body(argv: list[str], **kw) -> dict:
    return sbatch(argv, **kw)["submit"]


def wrapped(*argv: str, **kw) -> dict:
    return body([*argv, "--wrap", "true"], **kw)


def refused(argv: list[str], **kw) -> tuple[list[str], int]:
    with pytest.raises(OptError) as e:
        sbatch(argv, **kw)
    return e.value.lines, e.value.code


def with_script(text: str, *argv: str, **kw) -> dict:
    """Submit `job.sh` holding `text` (argv: options before the script path)."""
    return body([*argv, "job.sh"], files={"job.sh": text}, **kw)


def script_refused(text: str, *argv: str, **kw) -> tuple[list[str], int]:
    return refused([*argv, "job.sh"], files={"job.sh": text}, **kw)


# ======================================================================= --time
class TestTime:
    @pytest.mark.parametrize("spec, minutes", [
        ("5", 5), ("90", 90),                                 # minutes
        ("1:30", 2), ("0:59", 1), ("0:61", 2), ("10:00", 10),  # minutes:seconds, seconds round up
        ("1:00:30", 61), ("25:00:00", 1500), ("1:60:00", 120), ("00:00:01", 1),  # hours:minutes:seconds
        ("2-3", 3060), ("1-25", 2940), ("3-0", 4320), ("1-", 1440),            # days-hours
        ("2-3:04", 3064),                                      # days-hours:minutes
        ("2-3:04:05", 3065), ("0-0:0:1", 1), ("1-00:00:00", 1440),            # days-hours:minutes:seconds
    ])
    def test_forms(self, spec, minutes):
        assert slurmtime.parse_time(spec) == minutes
        assert wrapped(f"--time={spec}")["time_limit"] == minutes

    @pytest.mark.parametrize("spec", ["UNLIMITED", "unlimited", "INFINITE", "Infinite", "-1", "0", "0:00"])
    def test_no_limit(self, spec):
        assert slurmtime.parse_time(spec) is None
        assert wrapped("-t", spec)["time_limit"] is None

    def test_negative_days_are_accepted_like_slurm_and_mean_no_limit(self):
        # reference: `sbatch --time=-5` is submitted; squeue then shows an INVALID limit
        assert slurmtime.parse_time("-5") is None
        assert wrapped("--time=-5")["time_limit"] is None

    @pytest.mark.parametrize("spec", [
        "abc", "", "5 ", " 5", "5m", "1.5", "+5", "1:2:3:4", "2-abc", "1:xx", "1::2", ":5", "5:", "-",
        "1-2-3", "1-2:", "-1:30",
    ])
    def test_invalid(self, spec):
        assert refused(["--time", spec, "--wrap", "true"]) == (["sbatch: error: Invalid --time specification"], 255)
        with pytest.raises(OptError) as e:
            slurmtime.parse_time(spec)
        assert (e.value.lines, e.value.code) == (["sbatch: error: Invalid --time specification"], 255)

    def test_srun_names_itself(self):
        with pytest.raises(OptError) as e:
            opts.parse_srun(["-t", "abc", "true"], env={}, cwd=CWD)
        assert (e.value.lines, e.value.code) == (["srun: error: Invalid --time specification"], 255)

    @pytest.mark.parametrize("minutes, shown", [
        (None, "UNLIMITED"), (1, "1:00"), (10, "10:00"), (59, "59:00"), (60, "1:00:00"), (61, "1:01:00"),
        (1439, "23:59:00"), (1440, "1-00:00:00"), (1500, "1-01:00:00"), (3065, "2-03:05:00"),
    ])
    def test_format_time_is_squeues(self, minutes, shown):
        assert slurmtime.format_time(minutes) == shown

    @pytest.mark.parametrize("secs, shown", [(0, "0:00"), (4, "0:04"), (3723, "1:02:03"), (176400, "2-01:00:00")])
    def test_format_elapsed(self, secs, shown):
        assert slurmtime.format_elapsed(secs) == shown

    @given(st.integers(min_value=1, max_value=365 * 1440))
    def test_format_time_round_trips_through_parse_time(self, minutes):
        assert slurmtime.parse_time(slurmtime.format_time(minutes)) == minutes

    @given(st.integers(min_value=0, max_value=99), st.integers(min_value=0, max_value=23),
           st.integers(min_value=0, max_value=59), st.integers(min_value=0, max_value=59))
    def test_seconds_always_round_up(self, d, h, m, s):
        total = ((d * 24 + h) * 60 + m) * 60 + s
        expect = -(-total // 60) or None
        assert slurmtime.parse_time(f"{d}-{h}:{m}:{s}") == expect


# ======================================================================= getopt
class TestGetopt:
    def test_unique_long_prefixes(self):
        j = wrapped("--err=e.txt", "--job=foo", "--part", "debug", "--qo=q", "--dep=afterok:1")
        assert (j["stderr"], j["name"], j["partition"], j["qos"], j["dependency"]) == \
            (f"{CWD}/e.txt", "foo", "debug", "q", "afterok:1")

    def test_equals_and_separate_value_are_the_same(self):
        assert wrapped("--job-name=a b")["name"] == wrapped("--job-name", "a b")["name"] == "a b"
        assert wrapped("--comment=")["comment"] == ""          # an empty value is a value

    def test_value_may_start_with_a_dash(self):
        assert wrapped("-J", "-x")["name"] == "-x"
        assert wrapped("--comment", "--wrap")["comment"] == "--wrap"

    def test_clustered_and_attached_short_options(self):
        j = wrapped("-N2", "-HJname", "-n4")
        assert (j["nodes_min"], j["nodes_max"], j["hold"], j["name"], j["ntasks"]) == (2, 2, True, "name", 4)
        assert wrapped("-Hp", "high")["partition"] == "high"

    @pytest.mark.parametrize("arg, listed", [
        ("--ex", "'--exclude' '--exclusive' '--export' '--export-file' '--extra-node-info'"),
        ("--mem-", "'--mem-bind' '--mem-per-cpu' '--mem-per-gpu'"),
        ("--ti", "'--time' '--time-min'"),
        ("--q", "'--qos' '--quiet'"),
        ("--h", "'--help' '--hint' '--hold'"),
        ("--a", "'--account' '--acctg-freq' '--array'"),
        ("--mail", "'--mail-type' '--mail-user'"),
    ])
    def test_ambiguous_prefix(self, arg, listed):
        assert refused([arg, "--wrap", "true"]) == ([f"sbatch: option '{arg}' is ambiguous; possibilities: {listed}",
                                                      TRY], 255)

    def test_ambiguous_message_repeats_the_argument_as_typed(self):
        lines, _ = refused(["--mem-=5", "--wrap", "true"])
        assert lines[0] == "sbatch: option '--mem-=5' is ambiguous; possibilities: '--mem-bind' '--mem-per-cpu' " \
                           "'--mem-per-gpu'"

    def test_unknown_long_option(self):
        assert refused(["--bogus", "--wrap", "true"]) == (["sbatch: unrecognized option '--bogus'", TRY], 255)
        assert refused(["--bogus=5"])[0][0] == "sbatch: unrecognized option '--bogus=5'"

    def test_unknown_short_option(self):
        assert refused(["-y"]) == (["sbatch: invalid option -- 'y'", TRY], 255)
        assert refused(["-Hy"]) == (["sbatch: invalid option -- 'y'", TRY], 255)

    def test_missing_arguments(self):
        assert refused(["--time"]) == (["sbatch: option '--time' requires an argument", TRY], 255)
        assert refused(["-t"]) == (["sbatch: option requires an argument -- 't'", TRY], 255)
        assert refused(["-HJ"]) == (["sbatch: option requires an argument -- 'J'", TRY], 255)
        # a unique prefix is reported under the option's full name
        assert refused(["--wra"])[0][0] == "sbatch: option '--wrap' requires an argument"

    def test_flag_given_a_value(self):
        assert refused(["--hold=1"]) == (["sbatch: option '--hold' doesn't allow an argument", TRY], 255)
        assert refused(["--ho=1"])[0][0] == "sbatch: option '--hold' doesn't allow an argument"

    def test_optional_argument_only_with_equals(self):
        assert wrapped("--exclusive")["exclusive"] is True
        assert wrapped("--exclusive=user")["exclusive"] is True
        assert wrapped("--exclusive=oversubscribe")["exclusive"] is False
        assert wrapped("--nice")["nice"] == 100
        assert wrapped("--nice=")["nice"] == 100                # empty optional value: the default
        assert wrapped("--nice=5")["nice"] == 5
        # with a space the word is not the option's value but the script
        j = body(["--nice", "5"], files={"5": SH})
        assert (j["nice"], j["name"]) == (100, "5")
        j = body(["--exclusive", "user"], files={"user": SH})
        assert (j["exclusive"], j["name"]) == (True, "user")

    def test_errors_come_in_command_line_order(self):
        assert refused(["-t", "abc", "--bogus"])[0] == ["sbatch: error: Invalid --time specification"]
        assert refused(["--bogus", "-t", "abc"])[0][0] == "sbatch: unrecognized option '--bogus'"
        assert refused(["-t", "abc", "missing.sh"])[0] == ["sbatch: error: Invalid --time specification"]

    def test_version_help_usage_stop_at_once(self):
        assert sbatch(["--version", "--bogus"])["version"] is True
        assert sbatch(["-V"])["submit"] is None
        assert sbatch(["-h", "--bogus"])["help"] is True
        assert sbatch(["--usage"])["usage"] is True
        assert refused(["--bogus", "--version"])[0][0] == "sbatch: unrecognized option '--bogus'"
        assert refused(["-t", "abc", "--version"])[0] == ["sbatch: error: Invalid --time specification"]

    def test_double_dash_ends_options(self):
        j = body(["-J", "x", "--", "-script"], files={"-script": SH})
        assert (j["name"], j["argv"]) == ("x", [])

    def test_query_command_parser_keeps_its_contract(self):
        table = [("j", "jobs", 1, "jobs"), ("", "json", 0, "json"), ("h", "noheader", 0, "noheader")]
        pairs, pos = getopt.parse("squeue", ["--jobs=1", "-h", "x"], table)
        assert (pairs, pos) == ([("jobs", "1"), ("noheader", None)], ["x"])
        with pytest.raises(getopt.UsageError) as e:
            getopt.parse("squeue", ["--j"], table)
        assert e.value.lines == ["squeue: option '--j' is ambiguous; possibilities: '--jobs' '--json'",
                                 'Try "squeue --help" for more information']
        assert e.value.code == 1
        # as glibc: the argument is repeated as typed
        with pytest.raises(getopt.UsageError) as e:
            getopt.parse("squeue", ["--j=1"], table)
        assert e.value.lines[0] == "squeue: option '--j=1' is ambiguous; possibilities: '--jobs' '--json'"
        # two names for one option are no ambiguity; the first match is reported by its full name
        alias = [("M", "clusters", 1, "clusters"), ("", "cluster", 1, "clusters"), ("", "clear", 0, "clear")]
        assert getopt.parse("sacct", ["--clu=a"], alias, help_hint=False) == ([("clusters", "a")], [])
        with pytest.raises(getopt.UsageError) as e:
            getopt.parse("sacct", ["--cl"], alias, help_hint=False)
        assert e.value.lines == ["sacct: option '--cl' is ambiguous; possibilities: '--clusters' '--clear'"]
        with pytest.raises(getopt.UsageError) as e:
            getopt.parse("sacct", ["--clu"], alias, help_hint=False)
        assert e.value.lines == ["sacct: option '--clusters' requires an argument"]


# ======================================================================= #SBATCH directives
class TestDirectives:
    def test_directives_until_the_first_command(self):
        text = SH + "#SBATCH -J a\n\n# a comment\n   \n#SBATCH -p p1\necho hi\n#SBATCH -A late\n"
        j = with_script(text)
        assert (j["name"], j["partition"], j["account"]) == ("a", "p1", None)

    def test_indented_comment_does_not_stop_directives(self):
        assert with_script(SH + "   # note\n\t\n#SBATCH -J afterblank\n")["name"] == "afterblank"

    @pytest.mark.parametrize("line", ["# SBATCH -J x", "##SBATCH -J x", "  #SBATCH -J x", "\t#SBATCH -J x",
                                      "#sbatch -J x", "#Sbatch -J x"])
    def test_look_alikes_are_comments(self, line):
        assert with_script(SH + line + "\n#SBATCH -p after\n")["name"] == "job.sh"
        assert with_script(SH + line + "\n#SBATCH -p after\n")["partition"] == "after"

    def test_sbatch_glued_to_a_word_is_a_bad_directive(self):
        # Slurm reads `#SBATCHx` as the directive word "x" (not a comment)
        assert script_refused(SH + "#SBATCHx -A x\n") == (
            ["sbatch: error: Invalid directive found in batch script: x"], 255)
        assert with_script(SH + "#SBATCH-J dash\n#SBATCH\t-p tab\n")["partition"] == "tab"

    def test_quoting(self):
        j = with_script(SH + '#SBATCH --job-name="my job"\n#SBATCH --comment=\'it\'\'s\'\n')
        assert (j["name"], j["comment"]) == ("my job", "its")
        assert with_script(SH + '#SBATCH --comment="x\\"y"\n')["comment"] == 'x"y'
        assert with_script(SH + "#SBATCH -J 'a\\b'\n")["name"] == "ab"       # backslash escapes even in quotes
        assert with_script(SH + '#SBATCH -J "a#b"\n')["name"] == "a#b"

    def test_comments_end_the_line(self):
        j = with_script(SH + "#SBATCH -A acct # trailing comment\n#SBATCH --comment=a#b -p x\n")
        assert (j["account"], j["comment"], j["partition"]) == ("acct", "a", None)
        assert with_script(SH + "#SBATCH -J x # -p y\n")["partition"] is None

    def test_an_empty_argument_ends_the_line(self):
        j = with_script(SH + '#SBATCH -J a "" -p x\n')
        assert (j["name"], j["partition"]) == ("a", None)

    def test_directive_arguments_form_one_command_line(self):
        # `-J` at the end of one line takes the next line's first word
        assert script_refused(SH + "#SBATCH -J\n#SBATCH -p x\n") == (
            ["sbatch: error: Invalid directive found in batch script: x"], 255)
        assert script_refused(SH + "#SBATCH -J\n") == (["sbatch: option requires an argument -- 'J'", TRY], 255)

    def test_directive_errors(self):
        assert script_refused(SH + "#SBATCH foo -t abc\n") == (
            ["sbatch: error: Invalid directive found in batch script: foo"], 255)
        assert script_refused(SH + "#SBATCH -J a -- -p x\n") == (
            ["sbatch: error: Invalid directive found in batch script: -p"], 255)
        assert script_refused(SH + "#SBATCH --bogus\n") == (["sbatch: unrecognized option '--bogus'", TRY], 255)
        assert script_refused(SH + "#SBATCH -t abc\n") == (["sbatch: error: Invalid --time specification"], 255)

    def test_unmatched_quote(self):
        assert script_refused(SH + '#SBATCH     --job-name="unterminated   \n') == (
            ['sbatch: fatal: job.sh: line 2: Unmatched `"` in [--job-name="unterminated   ]'], 1)
        assert script_refused(SH + '#SBATCH -J a --comment="x\n') == (
            ['sbatch: fatal: job.sh: line 2: Unmatched `"` in [ --comment="x]'], 1)
        assert refused([], stdin=SH + "#SBATCH -J 'x\n") == (
            ["sbatch: fatal: stdin: line 2: Unmatched `'` in [ 'x]"], 1)

    def test_unmatched_quote_names_the_script_by_its_base_name(self):
        lines, _ = refused(["sub/uq.sh"], files={"sub/uq.sh": SH + '#SBATCH -J "x\n'})
        assert lines == ['sbatch: fatal: uq.sh: line 2: Unmatched `"` in [ "x]']

    def test_precedence_directive_env_command_line(self):
        text = SH + "#SBATCH -J dir -p dirp -t 5 -A dira\n#SBATCH --requeue\n"
        env = {**ENV, "SBATCH_PARTITION": "envp", "SBATCH_JOB_NAME": "envj", "SBATCH_TIMELIMIT": "7",
               "SBATCH_NO_REQUEUE": "1"}
        j = with_script(text, "-t", "9", env=env)
        assert (j["name"], j["partition"], j["time_limit"], j["account"], j["requeue"]) == \
            ("envj", "envp", 9, "dira", False)
        assert with_script(text)["requeue"] is True
        assert with_script(text, "-J", "cli", env=env)["name"] == "cli"

    @pytest.mark.parametrize("directive, cli, env, expect", [
        ("--requeue", ["--no-requeue"], {}, False),
        ("--no-requeue", ["--requeue"], {}, True),
        ("--requeue", [], {"SBATCH_NO_REQUEUE": ""}, False),
        ("--no-requeue", [], {"SBATCH_REQUEUE": "yes"}, True),
        ("--no-requeue", ["--requeue"], {"SBATCH_NO_REQUEUE": "1"}, True),
        ("--requeue", [], {"SBATCH_NO_REQUEUE": "0"}, True),      # 0 / no leave the flag unset
        ("--requeue", [], {"SBATCH_NO_REQUEUE": "no"}, True),
        ("--requeue", ["--no-requeue", "--requeue"], {}, True),
    ])
    def test_requeue_last_one_wins(self, directive, cli, env, expect):
        assert with_script(f"{SH}#SBATCH {directive}\n", *cli, env={**ENV, **env})["requeue"] is expect

    def test_requeue_defaults_to_the_cluster(self):
        assert wrapped()["requeue"] is None

    def test_command_line_options_after_the_script_belong_to_it(self):
        j = with_script(SH + "#SBATCH -J dir\n")
        j2 = body(["job.sh", "-J", "cli", "a b"], files={"job.sh": SH + "#SBATCH -J dir\n"})
        assert (j["name"], j2["name"], j2["argv"]) == ("dir", "dir", ["-J", "cli", "a b"])

    def test_help_version_usage_in_directives_are_ignored(self):
        for word in ("--help", "--usage", "--version", "-V"):
            r = sbatch(["job.sh"], files={"job.sh": f"{SH}#SBATCH {word}\n#SBATCH -J after\n"})
            assert (r["help"], r["usage"], r["version"], r["submit"]["name"]) == (False, False, False, "after")

    def test_directives_can_set_client_flags(self):
        r = sbatch(["job.sh"], files={"job.sh": SH + "#SBATCH -H\n#SBATCH --parsable\n#SBATCH -W\n"})
        assert (r["submit"]["hold"], r["parsable"], r["wait"]) == (True, True, True)

    def test_directive_chdir_sets_the_working_directory(self):
        assert with_script(SH + "#SBATCH -D sub\n")["workdir"] == f"{CWD}/sub"

    @pytest.mark.parametrize("line", ["#SBATCH hetjob", "#SBATCH HETJOB", "#SBATCH -J first packjob",
                                      "#SBATCH   hetjob  ", "#SBATCH hetjob -J second"])
    def test_heterogeneous_separator_starts_the_next_component(self, line):
        # Slurm takes any unquoted word hetjob/packjob as a component separator
        j = with_script(f"{SH}{line}\n#SBATCH -J second\n")
        assert [h["name"] for h in j["het"]] == ["second"]

    def test_a_separator_after_an_option_leaves_it_without_its_value(self):
        lines, code = script_refused(f"{SH}#SBATCH -J hetjob\n")
        assert code == 255 and "sbatch: option requires an argument -- 'J'" in lines  # (22.05: the same)

    @pytest.mark.parametrize("line", ["#SBATCH --comment=hetjob", "#SBATCH -J a # hetjob",
                                      "#SBATCH --job-name=myhetjob"])
    def test_the_word_hetjob_inside_an_argument_or_comment_is_no_separator(self, line):
        j = with_script(f"{SH}{line}\n#SBATCH -p second\n")
        assert j["partition"] == "second"

    def test_a_heterogeneous_jobs_script_keeps_no_empty_lines(self):
        # 22.05 (tests/data/slurm-2205-tools.md): lines of blanks stay, empty ones go; a job of one component keeps them
        het = "#!/bin/bash\n#SBATCH -J tl-blank -o /dev/null\n#SBATCH hetjob\n#SBATCH -n1\n  \necho a\n\t\n\n# c\necho b  \n\n"
        assert with_script(het)["script"] == (
            "#!/bin/bash\n#SBATCH -J tl-blank -o /dev/null\n#SBATCH hetjob\n#SBATCH -n1\n  \necho a\n\t\n# c\necho b  \n")
        plain = "#!/bin/bash\n\necho a\n\necho b\n"
        assert with_script(plain, "-n1", ":", "-n1")["script"] == "#!/bin/bash\necho a\necho b\n"
        assert with_script(plain)["script"] == plain

    @pytest.mark.parametrize("word", ['"hetjob"', "hetjobs", "ahetjob"])
    def test_a_quoted_or_longer_word_is_a_plain_bad_directive(self, word):
        assert script_refused(f"{SH}#SBATCH {word}\n") == (
            [f"sbatch: error: Invalid directive found in batch script: {word.strip(chr(34))}"], 255)

    def test_wrap_in_a_directive_is_ignored(self):
        assert with_script(SH + "#SBATCH --wrap=hostname\n")["script"] == SH + "#SBATCH --wrap=hostname\n"


# ======================================================================= environment variables
class TestInputEnvironment:
    @pytest.mark.parametrize("value, is_set", [("", True), ("yes", True), ("YES", True), ("1", True), ("2", True),
                                               ("0", False), ("no", False), ("true", False)])
    def test_flag_variables(self, value, is_set):
        r = sbatch(["--wrap", "true"], env={**ENV, "SBATCH_WAIT": value, "SBATCH_REQUEUE": value})
        assert r["wait"] is is_set
        assert r["submit"]["requeue"] is (True if is_set else None)

    def test_value_variables(self):
        env = {**ENV, "SBATCH_ACCOUNT": "a", "SBATCH_QOS": "q", "SBATCH_TIMELIMIT": "10", "SBATCH_MEM_PER_NODE": "1G",
               "SBATCH_OUTPUT": "o.txt", "SBATCH_ERROR": "e.txt", "SBATCH_INPUT": "i.txt",
               "SBATCH_OPEN_MODE": "append", "SBATCH_GPUS_PER_NODE": "2", "SBATCH_EXCLUSIVE": "",
               "SBATCH_SIGNAL": "USR1@60"}
        j = wrapped(env=env)
        assert (j["account"], j["qos"], j["time_limit"], j["mem_per_node"], j["open_mode"]) == \
            ("a", "q", 10, 1024, "append")
        assert (j["stdout"], j["stderr"], j["stdin"]) == (f"{CWD}/o.txt", f"{CWD}/e.txt", f"{CWD}/i.txt")
        assert (j["gpus_per_node"], j["exclusive"], j["signal"]) == (2, True, "USR1@60")

    def test_clusters_variables(self):
        assert sbatch(["--wrap", "true"], env={**ENV, "SLURM_CLUSTERS": "c1"})["clusters"] == "c1"
        assert sbatch(["-M", "c2", "--wrap", "true"], env={**ENV, "SBATCH_CLUSTERS": "c1"})["clusters"] == "c2"

    def test_empty_value_is_a_value(self):
        assert wrapped(env={**ENV, "SBATCH_JOB_NAME": ""})["name"] == ""
        assert refused(["--wrap", "true"], env={**ENV, "SBATCH_TIMELIMIT": ""}) == \
            (["sbatch: error: Invalid --time specification"], 255)

    def test_bad_values_are_refused_like_options(self):
        assert refused(["--wrap", "true"], env={**ENV, "SBATCH_TIMELIMIT": "abc"}) == \
            (["sbatch: error: Invalid --time specification"], 255)
        assert refused(["--wrap", "true"], env={**ENV, "SBATCH_EXCLUSIVE": "0"}) == \
            (["sbatch: error: Invalid --exclusive specification"], 255)

    def test_no_sbatch_hold_variable(self):
        assert wrapped(env={**ENV, "SBATCH_HOLD": "1"})["hold"] is False

    def test_memory_options_exclude_each_other_by_origin(self):
        mem_dir = SH + "#SBATCH --mem=2G\n"
        fatal = "sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."
        assert refused(["--mem=1G", "--mem-per-cpu=1G", "--wrap", "true"]) == ([fatal], 1)
        assert script_refused(mem_dir, "--mem-per-cpu=1G") == ([fatal], 1)
        # a directive overridden by SBATCH_MEM_PER_NODE counts as set by the environment
        j = with_script(mem_dir, "--mem-per-cpu=1G", env={**ENV, "SBATCH_MEM_PER_NODE": "3G"})
        assert (j["mem_per_node"], j["mem_per_cpu"]) == (None, 1024)
        j = with_script(SH, "--mem-per-cpu=1G", env={**ENV, "SBATCH_MEM_PER_NODE": "3G"})
        assert (j["mem_per_node"], j["mem_per_cpu"]) == (None, 1024)
        j = with_script(mem_dir, env={**ENV, "SBATCH_MEM_PER_CPU": "3G"})
        assert (j["mem_per_node"], j["mem_per_cpu"]) == (2048, None)
        assert refused(["--wrap", "true"], env={**ENV, "SBATCH_MEM_PER_NODE": "3G", "SBATCH_MEM_PER_CPU": "1G"}) == \
            (["sbatch: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually "
              "exclusive."], 1)

    def test_slurm_exit_error(self):
        env = {**ENV, "SLURM_EXIT_ERROR": "7"}
        assert refused([], env=env) == (["sbatch: error: Batch script is empty!"], 7)
        assert refused(["missing.sh"], env=env) == (["sbatch: error: Unable to open file missing.sh"], 7)
        assert refused(["--wrap", "true", "x"], env=env)[1] == 7
        assert refused(["--gres=tpu:1", "--wrap", "true"], env=env)[1] == 7
        # exit(-1) refusals and Slurm's fatal()/parse_int() keep their status
        assert refused(["--bogus"], env=env)[1] == 255
        assert refused(["-t", "abc", "--wrap", "true"], env=env)[1] == 255
        assert refused(["-n", "0", "--wrap", "true"], env=env)[1] == 1
        assert refused(["--mem=1", "--mem-per-cpu=1", "--wrap", "true"], env=env)[1] == 1

    def test_slurm_exit_error_zero(self):
        env = {**ENV, "SLURM_EXIT_ERROR": "0"}
        assert refused([], env=env) == (["sbatch: error: SLURM_EXIT_ERROR has zero value",
                                         "sbatch: error: Batch script is empty!"], 1)
        assert sbatch(["--wrap", "true"], env=env)["warnings"] == ["sbatch: error: SLURM_EXIT_ERROR has zero value"]


# ======================================================================= where the script comes from
class TestScriptSources:
    def test_file(self):
        text = SH + "#SBATCH -p high\nhostname\n"
        r = sbatch(["-N1", "sub/run.sh", "a1", "a 2", "-J", "x"], files={"sub/run.sh": text})
        j = r["submit"]
        assert (j["script"], j["name"], j["argv"], j["partition"]) == (text, "run.sh", ["a1", "a 2", "-J", "x"], "high")
        assert r["script_path"] == f"{CWD}/sub/run.sh"

    def test_wrap(self):
        r = sbatch(["--wrap", "echo hi; sleep 1"], env={**ENV, "SBATCH_JOB_NAME": "envj"})
        assert r["submit"]["script"] == "#!/bin/sh\n# This script was created by sbatch --wrap.\n\necho hi; sleep 1\n"
        assert r["submit"]["name"] == "envj"
        assert wrapped()["name"] == "wrap"
        assert r["script_path"] is None

    def test_wrap_text_is_not_read_for_directives(self):
        j = body(["--wrap", "#SBATCH -J nope\nhostname"])
        assert (j["name"], j["partition"]) == ("wrap", None)

    def test_wrap_refuses_script_arguments(self):
        assert refused(["--wrap", "true", "extra"]) == (
            ["sbatch: error: Script arguments not permitted with --wrap option"], 1)

    def test_stdin(self):
        j = body([], stdin=SH + "#SBATCH -J fromstdin\nhostname\n")
        assert j["name"] == "fromstdin"
        assert body(["-p", "debug"], stdin=SH + "hostname\n")["name"] == "sbatch"

    def test_stdin_is_read_only_when_needed(self):
        calls = []
        opts.parse_sbatch(["--wrap", "true"], env=ENV, cwd=CWD, read_stdin=lambda: calls.append(1) or "", **WHO)
        assert calls == []

    def test_missing_file(self):
        assert refused(["/nonexistent/script.sh"]) == (["sbatch: error: Unable to open file /nonexistent/script.sh"], 1)

    def test_empty(self):
        assert refused([]) == (["sbatch: error: Batch script is empty!"], 1)
        assert refused(["e.sh"], files={"e.sh": ""}) == (["sbatch: error: Batch script is empty!"], 1)

    def test_whitespace_only(self):
        assert refused(["w.sh"], files={"w.sh": "   \n\n"}) == (
            ["sbatch: error: Batch script contains only whitespace!"], 1)

    def test_no_shebang(self):
        assert refused([], stdin="echo no shebang\n") == (NOT_A_SCRIPT, 1)
        assert refused([], stdin="hostname\n") == (NOT_A_SCRIPT, 1)

    def test_dos_line_breaks(self):
        assert refused(["d.sh"], files={"d.sh": "#!/bin/sh\r\necho hi\r\n"}) == (
            ["sbatch: error: Batch script contains DOS line breaks (\\r\\n)",
             "sbatch: error: instead of expected UNIX line breaks (\\n)."], 1)
        # the shebang check comes first
        assert refused(["d.sh"], files={"d.sh": "echo hi\r\n"}) == (NOT_A_SCRIPT, 1)

    def test_command_line_errors_come_before_reading_the_script(self):
        assert refused(["-t", "abc", "missing.sh"])[0] == ["sbatch: error: Invalid --time specification"]
        assert refused(["missing.sh", "-t", "abc"])[0] == ["sbatch: error: Unable to open file missing.sh"]


class TestScriptSearch:
    """sbatch's script path resolution on a real file system."""

    @pytest.fixture()
    def tree(self, tmp_path):
        (tmp_path / "sub").mkdir()
        (tmp_path / "bin").mkdir()
        (tmp_path / "ok.sh").write_text(SH + "#SBATCH -J incwd\n")
        (tmp_path / "sub" / "only.sh").write_text(SH + "#SBATCH -J insub\n")
        (tmp_path / "bin" / "ok.sh").write_text(SH + "#SBATCH -J inpath\n")
        (tmp_path / "bin" / "tool.sh").write_text(SH + "#SBATCH -J tool\n")
        return tmp_path

    def name(self, tree, *argv: str, path: bool = True) -> str:
        env = {**ENV, "PATH": f"{tree}/bin:/usr/bin" if path else "/usr/bin"}
        return opts.parse_sbatch(list(argv), env=env, cwd=str(tree), **WHO)["submit"]["name"]

    def test_submit_directory_before_path(self, tree):
        assert self.name(tree, "ok.sh") == "incwd"
        assert self.name(tree, "tool.sh") == "tool"

    def test_chdir_directory_then_path_then_submit_directory(self, tree):
        assert self.name(tree, "-D", "sub", "only.sh") == "insub"
        assert self.name(tree, "-D", "sub", "ok.sh") == "inpath"
        assert self.name(tree, "-D", "sub", "ok.sh", path=False) == "incwd"
        (tree / "sub" / "ok.sh").write_text(SH + "#SBATCH -J subok\n")
        assert self.name(tree, "-D", "sub", "ok.sh") == "subok"

    def test_dot_names_are_relative_to_the_submit_directory(self, tree):
        assert self.name(tree, "-D", "sub", "./ok.sh") == "incwd"
        with pytest.raises(OptError) as e:
            self.name(tree, "-D", "sub", "./only.sh")
        assert (e.value.lines, e.value.code) == (["sbatch: error: Unable to open file ./only.sh"], 1)
        assert self.name(tree, "-D", "sub", "sub/only.sh") == "insub"

    def test_a_directory_reads_as_an_empty_script(self, tree):
        with pytest.raises(OptError) as e:
            self.name(tree, "sub")
        assert (e.value.lines, e.value.code) == (["sbatch: error: Batch script is empty!"], 1)

    def test_dos_line_breaks_in_a_real_file(self, tree):
        (tree / "dos.sh").write_bytes(b"#!/bin/sh\r\necho hi\r\n")
        with pytest.raises(OptError) as e:
            self.name(tree, "dos.sh")
        assert e.value.lines == ["sbatch: error: Batch script contains DOS line breaks (\\r\\n)",
                                 "sbatch: error: instead of expected UNIX line breaks (\\n)."]

    def test_script_text_is_copied_at_submit_time(self, tree):
        r = opts.parse_sbatch(["ok.sh"], env=ENV, cwd=str(tree), **WHO)
        (tree / "ok.sh").write_text(SH + "changed\n")
        assert r["submit"]["script"] == SH + "#SBATCH -J incwd\n"


# ======================================================================= values
class TestValues:
    @pytest.mark.parametrize("spec, mb", [
        ("500", 500), ("500M", 500), ("5m", 5), ("2G", 2048), ("2g", 2048), ("2GB", 2048), ("1T", 1048576),
        ("1024K", 1), ("1000K", 1), ("1K", 1), ("0", 0), ("0K", 0), (" 5", 5), ("+5", 5),
    ])
    def test_mem(self, spec, mb):
        assert wrapped(f"--mem={spec}")["mem_per_node"] == mb
        assert wrapped(f"--mem-per-cpu={spec}")["mem_per_cpu"] == mb

    @pytest.mark.parametrize("spec", ["1.5G", "abc", "-1", "", "1P", "5x", "M", "5Gxyz"])
    def test_mem_invalid(self, spec):
        assert refused([f"--mem={spec}", "--wrap", "true"]) == (["sbatch: error: Invalid --mem specification"], 255)
        assert refused([f"--mem-per-cpu={spec}", "--wrap", "true"]) == (
            ["sbatch: error: Invalid --mem-per-cpu specification"], 255)

    @pytest.mark.parametrize("spec, per_node", [
        ("gpu:2", 2), ("gpu", 1), ("gpu:a100:2", 2), ("gpu:a100", 1), ("gres:gpu:3", 3), ("gpu:8", 8),
    ])
    def test_gres(self, spec, per_node):
        assert wrapped(f"--gres={spec}")["gpus_per_node"] == per_node

    def test_gres_type_is_reported(self):
        assert sbatch(["--gres=gpu:a100:2", "--wrap", "true"])["gpu_type"] == "a100"

    @pytest.mark.parametrize("spec", ["tpu:1", "GPU:2", "gpu:x:y:2", "gpu:2(S:0)"])
    def test_gres_invalid(self, spec):
        assert refused([f"--gres={spec}", "--wrap", "true"]) == (
            ["sbatch: error: Invalid generic resource (gres) specification"], 1)

    def test_gpus_options(self):
        assert wrapped("-G", "4")["gpus"] == 4
        assert wrapped("--gpus=a100:2")["gpus"] == 2
        assert wrapped("--gpus-per-node=8")["gpus_per_node"] == 8
        assert wrapped("--gpus-per-node=a100:3")["gpus_per_node"] == 3
        assert wrapped("--gpus-per-task=1", "-n", "2")["gpus_per_task"] == 1

    def test_later_of_gres_and_gpus_per_node_wins(self):
        assert wrapped("--gres=gpu:2", "--gpus-per-node=3")["gpus_per_node"] == 3
        assert wrapped("--gpus-per-node=3", "--gres=gpu:2")["gpus_per_node"] == 2

    def test_gpus_per_task_needs_tasks_or_gpus(self):
        assert refused(["--gpus-per-task=1", "--wrap", "true"]) == (
            ["sbatch: error: Failed to validate job spec. --gpus-per-task used without either --gpus or "
             "-n/--ntasks is not allowed.",
             "sbatch: error: Invalid generic resource (gres) specification"], 1)

    def test_bad_gpu_count_is_slurmctlds_refusal(self):
        assert refused(["-G", "x", "--wrap", "true"]) == (
            ["sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification"], 1)

    @pytest.mark.parametrize("spec, lo, hi", [
        ("2", 2, 2), ("2-4", 2, 4), ("5-10", 5, 10), ("3k", 3072, 3072), ("-1", 1, 1), ("5-0", 5, None),
        (" 2", 2, 2), ("2 ", 2, 2),
    ])
    def test_nodes(self, spec, lo, hi):
        j = wrapped("-N", spec)
        assert (j["nodes_min"], j["nodes_max"]) == (lo, hi)

    @pytest.mark.parametrize("spec, message", [
        ("abc", '"abc" is not a valid node count'), ("", '"" is not a valid node count'),
        ("1,2", '"1,2" is not a valid node count'), ("2-4,6", '"4,6" is not a valid node count'),
        ("4-2", "Maximum node count 2 is less than minimum node count 4"),
        ("2-", "Maximum node count -1 is less than minimum node count 2"),
    ])
    def test_nodes_invalid(self, spec, message):
        assert refused(["-N", spec, "--wrap", "true"]) == ([f"sbatch: error: {message}"], 255)

    def test_zero_nodes(self):
        # sbatch itself accepts -N 0; slurmctld refuses a batch job without nodes
        assert refused(["-N", "0", "--wrap", "true"]) == (
            ["sbatch: error: Batch job submission failed: Node count specification invalid"], 1)

    @pytest.mark.parametrize("argv, option, value", [
        (["-n", "-1"], "--ntasks", "-1"), (["-n", "0"], "--ntasks", "0"), (["-n", "abc"], "--ntasks", "abc"),
        (["-n", "2x"], "--ntasks", "2x"), (["-c", "0"], "--cpus-per-task", "0"),
        (["--cpus-per-task=-1"], "--cpus-per-task", "-1"), (["--ntasks-per-node=0"], "--ntasks-per-node", "0"),
    ])
    def test_counts_refused_naming_the_option(self, argv, option, value):
        assert refused([*argv, "--wrap", "true"]) == (
            [f'sbatch: error: Invalid numeric value "{value}" for {option}.'], 1)

    def test_counts(self):
        j = wrapped("-n", "+3", "-c", "2", "--ntasks-per-node=4")
        assert (j["ntasks"], j["cpus_per_task"], j["ntasks_per_node"]) == (3, 2, 4)
        assert wrapped()["cpus_per_task"] == 1

    def test_chdir_relative_to_the_submit_directory(self):
        assert wrapped("-D", "sub")["workdir"] == f"{CWD}/sub"
        assert wrapped("--chdir=/abs")["workdir"] == "/abs"
        j = wrapped()
        assert (j["workdir"], j["submit_dir"]) == (CWD, CWD)

    def test_output_files_are_relative_to_the_working_directory(self):
        j = wrapped("-D", "sub", "-o", "out%j.txt", "-e", "/abs/e", "-i", "in")
        assert (j["stdout"], j["stderr"], j["stdin"]) == (f"{CWD}/sub/out%j.txt", "/abs/e", f"{CWD}/sub/in")
        j = wrapped()
        assert (j["stdout"], j["stderr"], j["stdin"]) == (None, None, None)

    @pytest.mark.parametrize("spec, mode", [("append", "append"), ("truncate", "truncate"), ("apple", "append"),
                                            ("T", "truncate"), ("A", "append")])
    def test_open_mode(self, spec, mode):
        assert wrapped(f"--open-mode={spec}")["open_mode"] == mode

    @pytest.mark.parametrize("spec", ["x", ""])
    def test_open_mode_invalid(self, spec):
        assert refused([f"--open-mode={spec}", "--wrap", "true"]) == (
            ["sbatch: error: Invalid --open-mode specification"], 255)

    def test_open_mode_default(self):
        assert wrapped()["open_mode"] == "truncate"

    @pytest.mark.parametrize("spec, nice", [("5", 5), ("-5", -5), ("abc", 0), ("5x", 5), ("+5", 5),
                                            ("2147483645", 2147483645), ("-2147483645", -2147483645)])
    def test_nice(self, spec, nice):
        assert wrapped(f"--nice={spec}")["nice"] == nice

    def test_nice_default_and_range(self):
        assert wrapped()["nice"] == 0
        assert wrapped("--nice")["nice"] == 100
        assert refused(["--nice=2147483646", "--wrap", "true"]) == (
            ["sbatch: error: Invalid --nice value, out of range (+/- 2147483645)"], 255)

    @pytest.mark.parametrize("spec", ["bogus", "0"])
    def test_exclusive_invalid(self, spec):
        assert refused([f"--exclusive={spec}", "--wrap", "true"]) == (
            ["sbatch: error: Invalid --exclusive specification"], 255)

    def test_kill_on_invalid_dep(self):
        assert wrapped("--kill-on-invalid-dep=YES")["kill_on_invalid_dep"] is True
        assert wrapped("--kill-on-invalid-dep=no")["kill_on_invalid_dep"] is False
        assert refused(["--kill-on-invalid-dep=1", "--wrap", "true"]) == (
            ["sbatch: error: Invalid --kill-on-invalid-dep specification"], 255)

    @pytest.mark.parametrize("spec", ["USR1", "B:USR1@60", "R:10@5", "SIGUSR1", "usr2@10", "XCPU", "9", "RB:TERM",
                                      "BR:HUP@7"])
    def test_signal_kept_as_given(self, spec):
        assert wrapped(f"--signal={spec}")["signal"] == spec

    @pytest.mark.parametrize("spec", ["BOGUS", "USR1@x", "PWR", "WINCH", "0", "65536", "B:", "@5"])
    def test_signal_invalid(self, spec):
        assert refused([f"--signal={spec}", "--wrap", "true"]) == (["sbatch: error: Invalid --signal specification"],
                                                                   255)

    @pytest.mark.parametrize("spec", ["2", "2:4", "2:4:1", "*:4", "2-4", "0", "", "4-2", "2:4:1:1", "1k"])
    def test_extra_node_info(self, spec):
        assert ["--extra-node-info", spec] in sbatch(["-B", spec, "--wrap", "true"])["ignored"]

    @pytest.mark.parametrize("spec, value, nth", [("x", "x", "first"), ("2:x", "x", "second"),
                                                  ("2:4:x", "x", "third"), ("2:4-x", "4-x", "second"),
                                                  ("2-", "2-", "first")])
    def test_extra_node_info_invalid(self, spec, value, nth):
        assert refused(["-B", spec, "--wrap", "true"]) == (
            [f'sbatch: error: Invalid numeric value "{value}" for {nth} arg of -B.'], 1)

    def test_other_checked_options_slurmlet_ignores(self):
        assert refused(["--wait-all-nodes=2", "--wrap", "true"]) == (
            ["sbatch: error: Invalid --wait-all-nodes specification"], 255)
        assert refused(["--wait-all-nodes=-1", "--wrap", "true"]) == (
            ['sbatch: error: Invalid numeric value "-1" for --wait-all-nodes.'], 1)
        assert refused(["--gres-flags=enforce", "--wrap", "true"]) == (
            ["sbatch: error: Invalid --gres-flags specification"], 255)
        assert sbatch(["--gres-flags=ENFORCE-BINDING", "--wait-all-nodes=1", "--wrap", "true"])["submit"]
        assert refused(["--gpus-per-socket=1", "--wrap", "true"]) == (
            ["sbatch: error: --gpus-per-socket option requires --sockets-per-node specification",
             "sbatch: error: Invalid generic resource (gres) specification"], 1)
        assert sbatch(["--gpus-per-socket=1", "-B", "2", "--wrap", "true"])["submit"]
        assert sbatch(["--gpus-per-socket=1", "--sockets-per-node=2", "--wrap", "true"])["submit"]

    def test_hold_comment_nodelist_exclude(self):
        j = wrapped("-H", "--comment=c", "-w", "node1", "-x", "node2", "-A", "acct", "-q", "qos")
        assert (j["hold"], j["comment"], j["nodelist"], j["exclude"], j["account"], j["qos"]) == \
            (True, "c", "node1", "node2", "acct", "qos")

    def test_client_flags(self):
        r = sbatch(["--parsable", "-W", "--test-only", "-M", "anchor", "--wrap", "true"])
        assert (r["parsable"], r["wait"], r["test_only"], r["clusters"]) == (True, True, True, "anchor")
        assert r["submit"]["test_only"] is True
        assert sbatch(["-Q", "--wrap", "true"])["quiet"]
        assert refused(["-Q", "-v", "--wrap", "true"]) == (
            ["sbatch: error: don't specify both --verbose (-v) and --quiet (-Q)"], 1)

    def test_submitter(self):
        j = wrapped()
        assert (j["user"], j["uid"], j["gid"], j["group"], j["submit_host"]) == ("u", 1000, 1000, "g", "login1")


# ======================================================================= --export
class TestExport:
    ENV = {"PATH": "/usr/bin", "FOO": "envfoo", "EDITOR": "vi", "BAR": "b", "SLURM_X": "1"}

    def environment(self, *argv: str) -> dict[str, str]:
        env = wrapped(*argv, env=self.ENV)["environment"]
        added = ("SLURM_PRIO_PROCESS", "SLURM_SUBMIT_DIR", "SLURM_SUBMIT_HOST", "SLURM_UMASK", "SLURM_EXPORT_ENV",
                 "SLURM_GET_USER_ENV")
        return {k: v for k, v in env.items() if k not in added}

    def test_all_is_the_default(self):
        assert self.environment() == self.ENV
        assert self.environment("--export=ALL") == self.ENV
        assert self.environment("--export=all") == self.ENV

    def test_none_keeps_only_slurm_variables(self):
        assert self.environment("--export=NONE") == {"SLURM_X": "1"}
        assert self.environment("--export=") == {"SLURM_X": "1"}

    def test_all_with_values(self):
        env = self.environment("--export=ALL,EDITOR=/bin/emacs,NEW=1")
        assert env == {**self.ENV, "EDITOR": "/bin/emacs", "NEW": "1"}

    def test_list(self):
        assert self.environment("--export=FOO,BAR=1") == {"FOO": "envfoo", "BAR": "1", "SLURM_X": "1"}
        assert self.environment("--export=FOO,MISSING") == {"FOO": "envfoo", "SLURM_X": "1"}
        assert self.environment("--export=NONE,FOO") == {"FOO": "envfoo", "SLURM_X": "1"}

    def test_items_apply_left_to_right(self):
        assert self.environment("--export=BAR,FOO=x,FOO")["FOO"] == "envfoo"
        assert self.environment("--export=FOO=x,ALL")["FOO"] == "envfoo"

    def test_callers_slurm_variables_always_win(self):
        assert self.environment("--export=FOO,SLURM_X=override")["SLURM_X"] == "1"

    def test_quotes_group_a_value_with_commas(self):
        assert self.environment("--export='A=1,2',FOO") == {"A": "1,2", "FOO": "envfoo", "SLURM_X": "1"}

    def test_sbatch_export_variable(self):
        env = wrapped(env={**self.ENV, "SBATCH_EXPORT": "NONE"})["environment"]
        assert "FOO" not in env and env["SLURM_X"] == "1"

    def test_sbatch_adds_its_own_variables(self):
        env = wrapped("--export=NONE", env=self.ENV)["environment"]
        assert (env["SLURM_SUBMIT_DIR"], env["SLURM_SUBMIT_HOST"]) == (CWD, "login1")

    def test_every_export_but_all_is_passed_on(self):  # tests/data/slurm-2205-export-env.md
        for spec in ("ALL,FOO=1", "FOO=1", "NONE,FOO=1"):
            env = wrapped(f"--export={spec}", env=self.ENV)["environment"]
            assert (env["SLURM_EXPORT_ENV"], env["SLURM_GET_USER_ENV"]) == (spec, "1")
        for spec in ("all", "ALL"):
            env = wrapped(f"--export={spec}", env=self.ENV)["environment"]
            assert "SLURM_EXPORT_ENV" not in env and "SLURM_GET_USER_ENV" not in env

    def test_export_environment_directly(self):
        assert opts.export_environment(None, {"A": "1"}) == {"A": "1"}
        assert opts.export_environment("A=2", {"A": "1", "SLURM_Y": "y"}) == {"A": "2", "SLURM_Y": "y"}


# ======================================================================= --begin
NOW = time.mktime((2026, 12, 2, 14, 49, 22, 0, 0, -1))     # a Wednesday, 14:49:22 local time


def local(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0) -> float:
    return time.mktime((y, mo, d, h, mi, s, 0, 0, -1))


class TestBegin:
    @pytest.mark.parametrize("spec, when", [
        ("now", NOW), ("now+60", NOW + 60), ("now+1hour", NOW + 3600), ("now+1 hour", NOW + 3600),
        ("now+5minutes", NOW + 300), ("now-60", NOW - 60), ("now+2days", local(2026, 12, 4, 14, 49, 22)),
        ("now+1week", local(2026, 12, 9, 14, 49, 22)),
        ("16:00", local(2026, 12, 2, 16)), ("16:00:30", local(2026, 12, 2, 16, 0, 30)),
        ("14:49", local(2026, 12, 3, 14, 49)), ("14:50", local(2026, 12, 2, 14, 50)), ("00:00", local(2026, 12, 3)),
        ("4:00pm", local(2026, 12, 2, 16)),
        ("noon", local(2026, 12, 3, 12)), ("midnight", local(2026, 12, 3)), ("teatime", local(2026, 12, 2, 16)),
        ("tomorrow", local(2026, 12, 3)), ("today", local(2026, 12, 2)),
        ("2027-01-02", local(2027, 1, 2)), ("2027-01-02T10:11", local(2027, 1, 2, 10, 11)),
        ("2027-01-02T10:11:12", local(2027, 1, 2, 10, 11, 12)),
        ("12/25", local(2026, 12, 25)), ("12/25/27", local(2027, 12, 25)), ("1225", local(2026, 12, 25)),
        ("01/05", local(2027, 1, 5)), ("tomorrowT10:00", local(2026, 12, 3, 10)),
        ("12/25-10:00", local(2026, 12, 25, 10)), ("uts1800000000", 1800000000),
    ])
    def test_forms(self, spec, when):
        assert slurmtime.parse_begin(spec, NOW) == when
        assert wrapped(f"--begin={spec}", now=NOW)["begin_time"] == when

    @pytest.mark.parametrize("spec, pos", [("now+5x", 4), ("4pm", 1), ("bogus", 0), ("25:00", 0),
                                           ("2027-13-01", 5)])
    def test_invalid(self, spec, pos):
        assert refused(["--begin", spec, "--wrap", "true"], now=NOW) == (
            [f"Invalid time specification (pos={pos}): {spec}", "sbatch: error: Invalid --begin specification"], 255)

    def test_empty(self):
        assert refused(["--begin=", "--wrap", "true"], now=NOW) == (["sbatch: error: Invalid --begin specification"],
                                                                    255)

    def test_short_option_and_default(self):
        assert wrapped("-b", "now+10", now=NOW)["begin_time"] == NOW + 10
        assert wrapped(now=NOW)["begin_time"] is None


# ======================================================================= --array
class TestArray:
    @pytest.mark.parametrize("spec, indexes, throttle", [
        ("0-15", list(range(16)), None), ("1,3,5", [1, 3, 5], None), ("1-7:2", [1, 3, 5, 7], None),
        ("0-15%4", list(range(16)), 4), ("1,3-5,9", [1, 3, 4, 5, 9], None), ("[1-3]", [1, 2, 3], None),
        ("1,,3", [1, 3], None), ("5", [5], None), ("0-1000", list(range(1001)), None), ("3,1,2,1", [1, 2, 3], None),
        ("0-15%abc", list(range(16)), None), ("0-9:3%2", [0, 3, 6, 9], 2),
    ])
    def test_specs(self, spec, indexes, throttle):
        assert grammar.parse_array(spec) == (indexes, throttle)
        assert wrapped(f"--array={spec}")["array"] == spec

    @pytest.mark.parametrize("spec", ["0-abc", "0-100000", "0-1001", "1001", "-1", "5-1", "1:2", "1-3:0", "1-3:-1",
                                      "abc", "1-3:2x"])
    def test_invalid(self, spec):
        expected = (["sbatch: error: Batch job submission failed: Invalid job array specification"], 1)
        assert refused(["-a", spec, "--wrap", "true"]) == expected
        with pytest.raises(OptError) as e:
            grammar.parse_array(spec)
        assert (e.value.lines, e.value.code) == expected

    def test_max_array_size(self):
        assert grammar.parse_array("0-9", max_size=10)[0] == list(range(10))
        with pytest.raises(OptError):
            grammar.parse_array("0-10", max_size=10)

    def test_default_output_names(self):
        assert patterns.default_output(False) == "slurm-%j.out"
        assert patterns.default_output(True) == "slurm-%A_%a.out"

    @pytest.mark.parametrize("ids, throttle, text", [
        ([1, 3, 5, 7, 9], 2, "1,3,5,7,9%2"), ([0, 1, 2, 3], None, "0-3"), ([5, 3, 4, 9], None, "3-5,9"),
        ([7], None, "7"), ([0, 1, 3, 4, 6], None, "0-1,3-4,6"), ([2, 2, 3], 0, "2-3"),
    ])
    def test_compress_indexes(self, ids, throttle, text):
        assert grammar.compress_indexes(ids, throttle) == text

    @given(st.sets(st.integers(min_value=0, max_value=1000), min_size=1))
    @settings(max_examples=200)
    def test_compress_round_trips_through_parse_array(self, ids):
        assert grammar.parse_array(grammar.compress_indexes(sorted(ids))) == (sorted(ids), None)


# ======================================================================= --dependency
class TestDependency:
    @pytest.mark.parametrize("spec, items, any_of", [
        ("afterok:1:2,afterany:3", [("afterok", ["1", "2"]), ("afterany", ["3"])], False),
        ("afterok:1?afternotok:2", [("afterok", ["1"]), ("afternotok", ["2"])], True),
        ("after:5+10", [("after", ["5+10"])], False), ("aftercorr:4", [("aftercorr", ["4"])], False),
        ("afterburstbuffer:4", [("afterburstbuffer", ["4"])], False), ("singleton", [("singleton", [])], False),
        ("123", [("afterany", ["123"])], False), ("123,456", [("afterany", ["123"]), ("afterany", ["456"])], False),
        ("afterok:5_2", [("afterok", ["5_2"])], False), ("afterok:5_*", [("afterok", ["5_*"])], False),
        ("AFTEROK:7", [("afterok", ["7"])], False), ("afterok:999999", [("afterok", ["999999"])], False),
    ])
    def test_types(self, spec, items, any_of):
        assert grammar.parse_dependency(spec) == (items, any_of)
        assert wrapped(f"--dependency={spec}")["dependency"] == spec

    @pytest.mark.parametrize("spec", ["bogus:1", "afterok", "afterok:", "afterok:abc", "afterok:0", "afterok:1:",
                                      "singleton:1", "1:2", "afterok:1,afternotok:2?afterany:3", "expand:4", ","])
    def test_invalid(self, spec):
        assert refused(["-d", spec, "--wrap", "true"]) == (
            ["sbatch: error: Batch job submission failed: Job dependency problem"], 1)


# ======================================================================= file name patterns
class TestPatterns:
    def test_reference_file_names(self):
        assert patterns.expand_pattern("pat-j%j-A%A-a%a-x%x-N%N-u%u.out", job_id=7905, name="pat", node="node1",
                                   user="root") == "pat-j7905-A7905-a4294967294-xpat-Nnode1-uroot.out"
        assert patterns.expand_pattern("pa-j%j-A%A-a%a-x%x-N%N.out", job_id=7908, array_job_id=7906, array_task_id=0,
                                   name="patarr", node="node1") == "pa-j7908-A7906-a0-xpatarr-Nnode1.out"
        assert patterns.expand_pattern("pa-j%j-A%A-a%a-x%x-N%N.out", job_id=7906, array_job_id=7906, array_task_id=1,
                                   name="patarr", node="node1") == "pa-j7906-A7906-a1-xpatarr-Nnode1.out"
        assert patterns.expand_pattern("step-%j-%s-%t-%n-%N.out", job_id=7911, step_id=0, task_id=0, node_index=0,
                                   node="node2") == "step-7911-0-0-0-node2.out"
        assert patterns.expand_pattern("pct-%j.out", job_id=7911) == "pct-7911.out"
        assert patterns.expand_pattern("e-%j.err", job_id=7910) == "e-7910.err"
        assert patterns.expand_pattern(patterns.default_output(False), job_id=7868) == "slurm-7868.out"
        assert patterns.expand_pattern(patterns.default_output(True), job_id=7887, array_job_id=7885,
                                   array_task_id=2) == "slurm-7885_2.out"

    @pytest.mark.parametrize("pattern, out", [
        ("%j", "42"), ("%x", "nm"), ("%A", "42"), ("%a", "4294967294"), ("%N", "n1"), ("%u", "user"),
        ("%s", "4294967291"), ("%t", "0"), ("%n", "0"), ("%%", "%"), ("100%%.out", "100%.out"), ("%%j", "%j"),
        ("job%4j.out", "job0042.out"), ("%10j", "0000000042"), ("%12j", "0000000042"), ("%3A", "042"),
        ("%4N", "n1"), ("%4x", "nm"), ("%q", "%q"), ("%4q", "4q"), ("a%", "a%"), ("a%4", "a4"),
        ("%J", "42.4294967291"), ("%u-%x-%j", "user-nm-42"),
    ])
    def test_specifiers(self, pattern, out):
        assert patterns.expand_pattern(pattern, job_id=42, name="nm", node="n1", user="user") == out

    def test_array_task(self):
        kw = dict(job_id=101, array_job_id=100, array_task_id=7)
        assert patterns.expand_pattern("%A_%a-%j-%3a", **kw) == "100_7-101-007"

    def test_step_task_node(self):
        assert patterns.expand_pattern("%J-%s-%2t-%n", job_id=9, step_id=3, task_id=1, node_index=2) == "9.3-3-01-2"

    @pytest.mark.parametrize("pattern, out", [
        ("a\\%j.out", "a%j.out"), ("\\slurm-%j.out", "slurm-%j.out"), ("c:\\\\x%j", "c:\\x%j"),
    ])
    def test_a_backslash_turns_expansion_off(self, pattern, out):
        assert patterns.expand_pattern(pattern, job_id=42) == out

    def test_workdir(self):
        assert patterns.expand_pattern("o-%j", job_id=1, workdir="/w") == "/w/o-1"
        assert patterns.expand_pattern("/abs/o-%j", job_id=1, workdir="/w") == "/abs/o-1"


# ======================================================================= srun
class TestSrun:
    def srun(self, *argv: str, env: dict | None = None) -> dict:
        return opts.parse_srun(list(argv), env=env or {}, cwd=CWD)

    def test_command_after_options(self):
        r = self.srun("-N2", "-l", "hostname", "-l", "--time=9")
        assert r["command"] == ["hostname", "-l", "--time=9"]
        assert (r["nodes_min"], r["nodes_max"], r["label"], r["time_limit"]) == (2, 2, True, None)

    def test_double_dash(self):
        assert self.srun("--", "hostname")["command"] == ["hostname"]
        assert self.srun("-N2", "--", "-x")["command"] == ["-x"]

    def test_clustered_flags(self):
        r = self.srun("-lN2", "true")
        assert (r["label"], r["nodes_min"]) == (True, 2)

    def test_options(self):
        r = self.srun("-n", "4", "-c", "2", "-t", "5", "-J", "name", "--mem=1G", "-K", "--exclusive", "true")
        assert (r["ntasks"], r["cpus_per_task"], r["time_limit"]) == (4, 2, 5)
        assert (r["name"], r["mem_per_node"]) == ("name", 1024)
        assert (r["kill_on_bad_exit"], r["exclusive"]) == (True, "exclusive")
        assert self.srun("-K0", "true")["kill_on_bad_exit"] is False

    def test_unknown_option(self):
        with pytest.raises(OptError) as e:
            self.srun("--bogus", "true")
        assert (e.value.lines, e.value.code) == (["srun: unrecognized option '--bogus'",
                                                  'Try "srun --help" for more information'], 255)

    def test_getopt_errors(self):
        for argv, line in [(["-y", "true"], "srun: invalid option -- 'y'"),
                           (["-t"], "srun: option requires an argument -- 't'"),
                           (["--cpu"], "srun: option '--cpu' is ambiguous; possibilities: '--cpu-bind' '--cpu-freq' "
                                       "'--cpus-per-gpu' '--cpus-per-task'")]:
            with pytest.raises(OptError) as e:
                self.srun(*argv)
            assert (e.value.lines[0], e.value.code) == (line, 255)

    def test_no_command(self):
        with pytest.raises(OptError) as e:
            self.srun("-N2")
        assert (e.value.lines, e.value.code) == (["srun: fatal: No command given to execute."], 1)

    @pytest.mark.parametrize("argv, line, code", [
        (["-n", "0", "true"], 'srun: error: Invalid numeric value "0" for --ntasks.', 1),
        (["-c", "0", "true"], 'srun: error: Invalid numeric value "0" for --cpus-per-task.', 1),
        (["--mem=abc", "true"], "srun: error: Invalid --mem specification", 255),
        (["-N", "abc", "true"], 'srun: error: "abc" is not a valid node count', 255),
    ])
    def test_value_errors(self, argv, line, code):
        with pytest.raises(OptError) as e:
            self.srun(*argv)
        assert (e.value.lines, e.value.code) == ([line], code)

    @pytest.mark.parametrize("argv, option, value", [
        (["-W", "abc"], "--wait", "abc"), (["--wait=-1"], "--wait", "-1"), (["-T", "0"], "--threads", "0"),
        (["-r", "-1"], "--relative", "-1"), (["-Kx"], "--kill-on-bad-exit", "x"),
    ])
    def test_numeric_values(self, argv, option, value):
        with pytest.raises(OptError) as e:
            self.srun(*argv, "true")
        assert (e.value.lines, e.value.code) == ([f'srun: error: Invalid numeric value "{value}" for {option}.'], 1)

    def test_help_and_version(self):
        assert "help" in self.srun("--help")["opts"]
        assert "version" in self.srun("-V")["opts"]

    def test_build_submit_from_srun_options(self):
        r = self.srun("-N2", "-J", "step", "--gres=gpu:2", "hostname")
        j = opts.build_submit(r["opts"], script="#!/bin/sh\nhostname\n", default_name="hostname", script_args=[],
                              env={"A": "1"}, cwd=CWD, prog="srun", **WHO)
        assert (j["name"], j["nodes_min"], j["nodes_max"], j["gpus_per_node"]) == ("step", 2, 2, 2)
        assert j["environment"]["A"] == "1"


# ======================================================================= import cost
def test_module_stays_cheap_to_import():
    code = ("import sys; before = set(sys.modules); import slurmlet.cli.opts, slurmlet.cli.argv; "
            "print(' '.join(sorted(set(sys.modules) - before)))")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": root, "PATH": os.environ.get("PATH", "")})
    added = set(out.stdout.split())
    assert not added & {"re", "shlex", "time", "argparse", "typing", "datetime", "dataclasses"}
    assert added <= {"__future__", "slurmlet", "slurmlet.cli", "slurmlet.cli.opts", "slurmlet.cli.argv", "slurmlet.common",
                     "slurmlet.common.grammar", "slurmlet.common.patterns", "slurmlet.common.slurmtime",
                     "slurmlet.cli.getopt", "slurmlet.cli.optvalues"}
