"""salloc and srun wait in their main thread (for the command, for output) while helper threads
watch the job: the process's signals must reach the main thread, where Python runs the handlers."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

from slurmlet.cli.common import start_thread


def test_a_helper_thread_blocks_the_signals_and_the_caller_keeps_its_mask():
    seen: dict[str, set] = {}
    done = threading.Event()

    def helper() -> None:
        seen["mask"] = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        done.set()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    t = start_thread(helper)
    assert done.wait(30)
    t.join(30)
    assert {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGWINCH} <= seen["mask"]
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before


def test_two_signals_in_a_row_both_reach_a_main_thread_blocked_in_waitpid():
    # salloc's shape: the main thread waits for its command; a helper thread sits in a blocking call;
    # SIGINT then SIGTERM at once. SIGTERM's handler must run while the command still runs (it is
    # what ends the command), so its delivery to the helper thread would hang this for good.
    prog = textwrap.dedent("""
        import signal, subprocess, sys, time
        from slurmlet.cli.common import start_thread
        child = subprocess.Popen(["sleep", "60"])
        signal.signal(signal.SIGINT, lambda s, f: None)
        signal.signal(signal.SIGTERM, lambda s, f: child.kill())
        start_thread(lambda: time.sleep(120))
        print("ready", flush=True)
        child.wait()
        print("ended", flush=True)
    """)
    for _ in range(20):
        p = subprocess.Popen([sys.executable, "-c", prog], stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline() == "ready\n"
        os.kill(p.pid, signal.SIGINT)
        os.kill(p.pid, signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
        assert out == "ended\n" and p.returncode == 0
