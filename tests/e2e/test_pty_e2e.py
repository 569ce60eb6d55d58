"""srun --pty the way a person uses it: typed into a terminal multiplexer (tmux) on a real 2-node local
cluster. The whole debugging session of issue 15: `salloc --gres=gpu:1 ... srun --pty bash`, commands,
the window resized, a script watched with sstat from another shell, Ctrl-C, exit; and
`srun --jobid=N --overlap --pty bash` into a running batch job."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import uuid

import pytest

from tests.conftest import BIN, Cluster, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux")]


class Terminal:
    """A tmux window of its own server, running an interactive bash with the cluster's environment."""

    def __init__(self, c: Cluster, cols: int = 100, rows: int = 30):
        self.sock = f"slurmlet-{uuid.uuid4().hex[:8]}"
        env = dict(c.env, PATH=f"{BIN}:{c.env.get('PATH', '/usr/bin:/bin')}", PS1="outer$ ", TERM="xterm")
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k.startswith(("SLURMLET_", "PATH", "PS1",
                                                                                             "TERM", "HOME")))
        self.tmux("new-session", "-d", "-s", "t", "-x", str(cols), "-y", str(rows), "-c", str(c.workdir),
                  f"env -i {exports} bash --norc --noprofile")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.sock, *args], check=True, capture_output=True, text=True).stdout

    def type(self, line: str) -> None:
        self.tmux("send-keys", "-t", "t", "-l", line)
        self.tmux("send-keys", "-t", "t", "Enter")

    def screen(self) -> list[str]:
        return [x.rstrip() for x in self.tmux("capture-pane", "-p", "-t", "t", "-S", "-200").splitlines()]

    def wait_for(self, text: str, timeout: float = 60) -> list[str]:
        try:
            return wait_until(lambda: (s := self.screen()) and any(text in x for x in s) and s, timeout,
                              what=f"{text!r} on the terminal")
        except AssertionError as e:
            raise AssertionError(f"{e}; the screen:\n" + "\n".join(self.screen())) from None

    def wait_prompt(self, prompt: str, timeout: float = 60) -> None:
        """Until the last line is that prompt (the shell waits for input)."""
        wait_until(lambda: [x for x in self.screen() if x][-1:] == [prompt.rstrip()], timeout,
                   what=f"the prompt {prompt!r}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True)


@pytest.fixture
def term(cluster: Cluster):
    t = Terminal(cluster)
    yield t
    t.close()


def test_a_debugging_session_on_a_gpu_node(fresh_cluster, tmp_path):
    """salloc a GPU, srun --pty bash, run a script, watch it with sstat from another shell, exit."""
    c = fresh_cluster(nodes=2, gpus=2).start()
    term = Terminal(c)
    try:
        _debugging_session(c, term)
    finally:
        term.close()


def _debugging_session(c: Cluster, term: Terminal) -> None:
    term.type("salloc -N1 --gres=gpu:1 -J dbg srun --pty env PS1='job$ ' bash --norc --noprofile")
    screen = term.wait_for("are ready for job")
    jid = int(next(x for x in screen if "Granted job allocation" in x).split()[-1])
    term.type("echo $((6*7)) $SLURM_JOB_NAME $SLURM_STEP_ID $SLURM_PROCID gpus=$CUDA_VISIBLE_DEVICES; tty; stty size")
    term.wait_for("42 dbg 0 0 gpus=0")
    term.wait_prompt("job$ ")  # the three commands' lines come one after another: all of them are out
    screen = term.screen()
    after = screen[max(i for i, x in enumerate(screen) if "42 dbg 0 0" in x) + 1:]
    assert after[0].startswith("/dev/pts/") and after[1] == "30 100"  # a terminal of the window's size
    term.tmux("resize-window", "-t", "t", "-x", "120", "-y", "40")
    term.type("stty size")
    term.wait_for("40 120")  # the new size reached the task's terminal (SIGWINCH)
    # a script that holds 120 MiB, watched from another shell with sstat
    term.type("python3 -c \"import time; x = bytearray(120 << 20); x[::4096] = b'1' * len(x[::4096]); "
              "print('holding', flush=True); time.sleep(300)\"")
    term.wait_for("holding")

    def rss() -> int:
        out = c.run([str(BIN / "sstat"), "-j", str(jid), "-n", "-P", "-o", "MaxRSS,NTasks"]).stdout.strip()
        kb, _, n = out.partition("|")
        return int(kb[:-1]) if kb.endswith("K") and n == "1" and int(kb[:-1]) > 120 << 10 else 0
    wait_until(rss, timeout=60, what="sstat to see the script's 120 MiB")
    term.tmux("send-keys", "-t", "t", "C-c")  # the remote terminal's line discipline interrupts it
    term.type("echo rc=$?")
    term.wait_for("rc=130")
    term.type("exit 3")
    term.wait_for(f"salloc: Relinquishing job allocation {jid}")
    term.type("echo outer=$?")
    screen = term.wait_for("outer=3")
    assert "srun: error: node1: task 0: Exited with exit code 3" in screen
    c.wait_state(jid, "FAILED")
    rows = c.run(f"sacct -j {jid} -n -P -o JobID,JobName,State,ExitCode").stdout.splitlines()
    assert rows == [f"{jid}|dbg|FAILED|3:0", f"{jid}.0|env|FAILED|3:0"]  # (the step runs `env PS1=... bash`)
    wait_until(lambda: c.idle_nodes() == {"node1", "node2"}, what="the GPU node to be free again")


def test_a_shell_in_a_running_batch_job(cluster: Cluster, term: Terminal):
    c = cluster
    jid = c.sbatch("-N1", "-J", "train", "--wrap", "sleep 300")
    c.wait_state(jid, "RUNNING")
    term.type(f"srun --jobid={jid} --overlap --pty env PS1='job$ ' bash --norc --noprofile")
    term.wait_prompt("job$ ")
    term.type("echo in $SLURM_JOB_ID $SLURM_JOB_NAME $SLURM_STEP_ID; pgrep -x -c sleep")
    term.wait_for(f"in {jid} train 0")
    term.type("exit")
    term.wait_prompt("outer$ ")  # (what is typed before that goes to the job's shell)
    term.type("echo outer=$?")
    term.wait_for("outer=0")
    assert c.job(jid)["state"] == "RUNNING"  # the job goes on
    c.run(f"scancel {jid}")
    c.wait_state(jid, "CANCELLED")
