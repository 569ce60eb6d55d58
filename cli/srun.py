"""srun. Inside an allocation it runs the command as a job step across the job's nodes (the
agents stream each task's output back here); outside one it allocates, runs the command as the
allocation's step and releases it, as Slurm does."""

from __future__ import annotations

import os
import sys

from slurmlet.common import streamhead

TYPE_CHECKING = False  # keep typing out of srun's import path
if TYPE_CHECKING:
    from collections.abc import Callable


def main(argv: list[str]) -> int:
    from slurmlet.cli.opts import parse_srun
    from slurmlet.common.grammar import OptError
    groups: list[list[str]] = [[]]  # `srun A : B`: a heterogeneous step (and job), a component per group
    for arg in argv:
        if arg == ":":
            groups.append([])
        else:
            groups[-1].append(arg)
    try:
        req = parse_srun(groups[0], env=dict(os.environ), cwd=os.getcwd())
        own = os.environ.get("SLURM_JOB_ID")  # (a step of this heterogeneous job, not of another's)
        if len(groups) > 1 or "het-group" in req["opts"] or os.environ.get("SLURM_HET_SIZE") and own and \
                str(req["opts"].get("jobid") or own).split("+")[0] == own:
            # each component's counts are its own or its job component's, not the batch step's
            bare = {k: v for k, v in os.environ.items() if k not in _COUNTS}
            parsed = [parse_srun(g, env=bare, cwd=os.getcwd()) for g in groups]
            req["components"] = _components(parsed, req, dict(os.environ))
            req["groups"] = [parse_srun(g, env=dict(os.environ), cwd=os.getcwd()) for g in groups]
    except OptError as e:
        (sys.stdout if e.stdout else sys.stderr).write("\n".join(e.lines) + "\n")
        return e.code
    o = req["opts"]
    if "version" in o:
        print("slurm-wlm 22.05.8")
        return 0
    if "help" in o or "usage" in o:
        from slurmlet.cli.helptext import text
        sys.stdout.write(text("srun", "help" if "help" in o else "usage"))
        return 0
    if req.get("cpu_bind"):
        from slurmlet.common.cpubind import CpuBindError, parse
        try:
            parse(str(req["cpu_bind"]))
        except CpuBindError as e:
            sys.stderr.write("\n".join(e.lines) + "\n")
            return 1
    if not req["command"]:
        print("srun: fatal: No command given to execute.", file=sys.stderr)
        return 1
    if "quiet" not in o:
        for line in req.get("info") or []:
            print(line, file=sys.stderr)
        for opt, _value in req.get("ignored") or []:  # accepted as Slurm accepts it; no effect here
            print(f"srun: warning: {opt} is accepted and ignored", file=sys.stderr)
    if o.get("clusters"):
        from slurmlet.cli.clusters import check
        if check("srun", str(o["clusters"])) is None:
            return 1
    try:
        if os.environ.get("SLURM_JOB_ID") and "jobid" not in o or o.get("jobid"):
            if req["pty"]:
                _pty_setup()
            return _step(req)
        return _allocate_and_run(req)  # (--pty: the terminal is made raw once the allocation is granted)
    finally:
        if req["pty"]:
            _pty_restore()


#: the job's counts that srun takes from its environment (a batch step's: the first component's)
_COUNTS = ("SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NNODES", "SLURM_NTASKS_PER_NODE", "SLURM_CPUS_PER_TASK")


def _components(parsed: list[dict], first: dict, env: dict[str, str]) -> list[dict]:
    """A heterogeneous step's components: one per `:`-separated group (`parsed`), in
    the job component of its place or of its --het-group; `--het-group=0,1` alone runs the same
    command in each of them. Refused as srun refuses a group it cannot read. Each has its own
    -o/-e (22.05: a group without them takes the first group's, `first`) and, given --export, its
    own environment (built from srun's, `env`)."""
    from slurmlet.cli.opts import export_environment
    from slurmlet.common.grammar import OptError, parse_array
    parts = []
    for n, r in enumerate(parsed):
        spec = r["opts"].get("het-group")
        try:
            groups = parse_array(str(spec), 128, "srun")[0] if spec is not None else [n]
        except OptError:
            groups = []
        if not groups or max(groups) > 127:
            raise OptError([f"srun: fatal: Invalid --het-group value: {spec}"], 1, fixed=True)
        own = {"stdout": r["stdout"] or first["stdout"],
               "stderr": r["stderr"] or (None if r["stdout"] else first["stderr"])}
        if isinstance(r["opts"].get("export"), str):
            own["environment"] = export_environment(r["opts"]["export"], env, srun=True)
        parts += [{"het_group": g, "argv": r["command"], "nodes": r["nodes_min"], "ntasks": r["ntasks"],
                   "ntasks_per_node": r["ntasks_per_node"], "cpus_per_task": r["cpus_per_task"], **own}
                  for g in groups]
    return parts


#: srun --pty: the terminal's settings before srun made it raw, restored when srun ends
_SAVED_TTY: list = []
#: called (from the main thread) when the terminal's size changes: sends it to the task's terminal
_ON_WINCH: list = []


def _pty_setup() -> None:
    """The local terminal goes raw (every key goes to the task's terminal, whose line discipline acts
    on it, Ctrl-C included); SIGWINCH passes size changes on."""
    import signal
    if sys.stdin.isatty():
        import termios
        import tty
        _SAVED_TTY.append(termios.tcgetattr(0))
        tty.setraw(0, termios.TCSANOW)  # (not TCSAFLUSH: what was typed ahead goes to the task)
    signal.signal(signal.SIGWINCH, lambda signum, frame: [f() for f in _ON_WINCH])


def _pty_restore() -> None:
    if _SAVED_TTY:
        import termios
        termios.tcsetattr(0, termios.TCSADRAIN, _SAVED_TTY.pop())


def _winsize() -> tuple[int, int]:
    try:
        size = os.get_terminal_size(sys.stdin.fileno())
        return size.lines, size.columns
    except (OSError, ValueError):
        return 24, 80


def _step(req: dict, job_id: int | None = None, env: dict[str, str] | None = None,
          addr: str | None = None, own: bool = False, intr: _Interrupt | None = None) -> int:
    """A step of the current (or --jobid, or `job_id`'s) allocation: the controller lays its tasks
    out over the job's nodes, their agents start them and stream their output here (to `addr`'s
    host, by default this node's); srun exits with the highest task exit code. `own`: the allocation
    is this srun's, and Ctrl-C cancels it (else the step)."""
    import socket

    from slurmlet.cli import http
    o = req["opts"]
    if job_id is None:
        job_id = int(str(o.get("jobid") or os.environ["SLURM_JOB_ID"]).split("_")[0].split(".")[0])
    if env is None:  # (--export's, which may be empty: NONE where srun's environment has no SLURM_*)
        env = req["environment"] if req.get("environment") is not None else dict(os.environ)
    srv = _listener()
    io_addr = f"{addr or os.environ.get('SLURMLET_NODE_ADDR') or '127.0.0.1'}:{srv.getsockname()[1]}"
    from slurmlet.cli.opts import umask_text
    env.setdefault("SLURM_UMASK", umask_text())
    from slurmlet.cli.opts import option_environment
    env.update(option_environment(o, "srun"))
    # srun's own, in every step: its priority and the cluster it works on
    env["SLURM_PRIO_PROCESS"] = str(os.getpriority(os.PRIO_PROCESS, 0))
    if env.get("SLURM_CLUSTER_NAME"):
        from slurmlet.common.jobfacts import working_cluster
        env["SLURM_WORKING_CLUSTER"] = working_cluster(env["SLURM_CLUSTER_NAME"], http.controller_url())
    body = {"argv": req["command"], "nodes": req["nodes_min"], "ntasks": req["ntasks"],
            "ntasks_per_node": req["ntasks_per_node"], "cpus_per_task": req["cpus_per_task"],
            "gpus_per_task": req["gpus_per_task"], "environment": {k: str(v) for k, v in env.items()},
            "cwd": req["workdir"] or os.getcwd(), "io": io_addr,
            "label": req["label"], "unbuffered": req["unbuffered"], "stdout": req["stdout"], "stderr": req["stderr"],
            "nodelist": _hosts(o.get("nodelist")), "srun_pid": os.getpid(),
            "pty": req["pty"], "winsize": _winsize(), "cpu_bind": req.get("cpu_bind") or None,
            "input": _input(req),
            "mem_per_node": req.get("mem_per_node") if "mem" in o else None,
            "mem_per_cpu": req.get("mem_per_cpu") if "mem-per-cpu" in o else None,
            "srun_host": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
            **({"components": req["components"]} if req.get("components") else {}),
            # the streams' headers as words: no JSON decoder to load (common/streamhead.py)
            "io_header": streamhead.WORDS}
    # (each only when asked for: a controller without step names or --exact takes the request still)
    if req["name"] is not None:
        body["name"] = req["name"]
    if "exact" in o or ("exclusive" in o and not own):  # (a step's --exclusive is --exact in 22.05)
        body["exact"] = True
    if req["gpus_per_node"]:
        body["gpus_per_node"] = req["gpus_per_node"]
    # Ctrl-C and SIGTERM are taken from before the step is asked for: one that comes while it is being
    # made cancels it once it exists (an allocation of srun's own has its `intr` since its submission)
    intr = intr or _Interrupt()
    try:
        try:
            step = http.request("POST", f"/api/v1/jobs/{job_id}/steps", body)
        except http.ControllerError as e:  # a controller older than io_header: its agents write JSON
            if e.status != 422 or not e.error.startswith("io_header:"):
                raise
            del body["io_header"]
            step = http.request("POST", f"/api/v1/jobs/{job_id}/steps", body)
    except http.ControllerError as e:
        if not (own and intr.got):  # (interrupted: its allocation was cancelled under it)
            print(f"srun: error: Unable to create step for job {job_id}: {e.error}", file=sys.stderr)
        if own:  # no step 0 to end the allocation: it is given back now
            import contextlib
            with contextlib.suppress(http.Unreachable, http.ControllerError):
                http.request("POST", f"/api/v1/jobs/{job_id}/complete", {"exit_code": 1})
        return 1
    io = _StepIO(srv, {r for x in step["layout"] for r in x["ranks"]}, req["label"], req["unbuffered"],
                 bool(req.get("pty")))
    sid = step["step_id"]
    io.step = f"{job_id}.{sid}"
    if req["kill_on_bad_exit"]:  # -K: a task that fails takes the others down with it
        io.on_bad_exit = lambda: http.request("POST", f"/api/v1/jobs/{job_id}/steps/{sid}/cancel", {})

    intr.io = io

    def kill(sig: int | None = None) -> None:
        http.request("POST", f"/api/v1/jobs/{job_id}/steps/{sid}/cancel", {"now": True, "signal": sig})
    if req.get("wait"):  # -W N: N seconds after the first task's end the others are killed
        io.max_wait = (int(req["wait"]), kill)
    intr.arm_step(f"{job_id}.{sid}", kill)  # (an allocation of srun's own then ends with its step)
    if intr.got:
        io.cancelled = True

    def step_over() -> bool:
        return http.request("GET", f"/api/v1/jobs/{job_id}/steps/{sid}")["state"] != "RUNNING"
    io.run(step_over)
    if not io.cancelled and not own:  # (an own allocation ends with its step 0: its srun waits for that)
        # every task has exited; before the batch script goes on (and perhaps ends the job, which
        # cancels the steps still running) the controller must have each node's report of the step
        import time
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:  # (one long-poll; a controller that does not wait is asked again)
            try:
                left = max(0.1, deadline - time.monotonic())
                if http.request("GET", f"/api/v1/jobs/{job_id}/steps/{sid}?wait={left:.1f}",
                                timeout=left + 30)["state"] != "RUNNING":
                    break
            except (http.Unreachable, http.ControllerError):
                break
            time.sleep(0.02)
    return _report(io)


class _Interrupt:
    """Ctrl-C or SIGTERM (and SIGHUP with `hangup`, the terminal gone): say so, as srun does, and cancel
    the step, or the allocation srun made (`arm`'s callable; a signal that came before it is acted on
    when it is armed). srun then waits for its tasks' ends as usual. Once the step runs (`arm_step`),
    as 22.05's srun: a Ctrl-C says which tasks still run, a second within a second sends them SIGINT
    and ends the step, and so does any other signal, at once (SIGKILL, slurmstepd's lines)."""

    def __init__(self, hangup: bool = False) -> None:
        import signal
        self.got = False  #: a signal came
        self.cancel: Callable[..., object] | None = None
        self.done = False  #: cancel() was called
        self.io: _StepIO | None = None
        self.step: str | None = None  #: JOB.STEP once it runs
        self.last_ctrl_c: float | None = None
        for s in (signal.SIGINT, signal.SIGTERM, *((signal.SIGHUP,) if hangup else ())):
            signal.signal(s, self._signalled)

    def arm(self, cancel: Callable[..., object]) -> None:
        self.cancel = cancel
        if self.got:
            self._fire()

    def arm_step(self, step: str, kill: Callable[..., object]) -> None:
        """The step `step` runs; `kill(signal=None)` ends it at once, after that signal."""
        self.step = step
        self.arm(kill)

    def _signalled(self, signum, frame) -> None:  # noqa: ANN001
        import signal
        if self.got and self.cancel is None:  # a second one while the step is still being asked for: srun
            raise KeyboardInterrupt  # gives up at once (its step, if the controller makes it, is not cancelled)
        first = None
        if self.step is not None and self.got:  # (forcing already: asked again, quietly)
            self.done = False
            self._fire()
            return
        if signum == signal.SIGINT and self.step is not None and self.io is not None:
            import time
            now = time.monotonic()
            if self.last_ctrl_c is None or now - self.last_ctrl_c > 1.0:
                self.last_ctrl_c = now
                running = sorted(self.io.ranks - set(self.io.exits))
                lines = "srun: interrupt (one more within 1 sec to abort)\n"
                if running:
                    lines += tasks_line(self.step, running, "running") + "\n"
                os.write(2, lines.encode())  # (not print: this thread may be inside one)
                return
            os.write(2, f"srun: sending Ctrl-C to StepId={self.step}\n".encode())
            first = signal.SIGINT
            self.io.interrupted = True
        os.write(2, b"srun: forcing job termination\n")
        self.got = True
        if self.io is not None:
            self.io.cancelled = True
        self.done = False  # (each signal asks again, as before: the first answer may have been lost)
        self._fire(first)

    def _fire(self, first: int | None = None) -> None:
        if self.cancel is None or self.done:
            return
        self.done = True
        try:
            if first is None:
                self.cancel()
            else:
                self.cancel(first)
        except Exception:  # noqa: BLE001 - the controller may be gone; we are leaving anyway
            pass


def _report(io: _StepIO) -> int:
    """Say which tasks failed, as srun does; the highest exit code (128 + signal for a signal), and
    at least 1 when srun cancelled its step and not every task's end came (none may have started)."""
    _pty_restore()  # (--pty: lines for a terminal that is no longer raw)
    worst = 1 if io.cancelled and len(io.exits) < io.ntasks else 0
    forced = io.cancelled  #: srun said that it ended the step already
    for rank in sorted(io.exits):
        code, sig, node = io.exits[rank]
        if rank in io.oom:  # (22.05's srun then exits 1)
            print(f"srun: error: {node}: task {rank}: Out Of Memory", file=sys.stderr)
            worst = max(worst, 1)
        elif sig:
            if not io.interrupted:  # (a second Ctrl-C's: not reported, as 22.05's srun)
                print(f"srun: error: {node}: task {rank}: {_signame(sig)}", file=sys.stderr)
            if not forced:  # (a task killed by a signal: 22.05's srun says this once)
                print(f"srun: Force Terminated StepId={io.step}", file=sys.stderr)
                forced = True
            worst = max(worst, 128 + sig)
        elif code:
            print(f"srun: error: {node}: task {rank}: Exited with exit code {code}", file=sys.stderr)
            worst = max(worst, code)
    return worst


def _input(req: dict) -> str | None:
    """--input: "all" (the default: every task reads srun's stdin), "none", or the one task's rank
    (None, /dev/null for every task: --pty's terminal is task 0's own, a file name is not read here)."""
    if req.get("pty"):
        return None
    given = str(req.get("stdin") or "all")
    return given if given in ("all", "none") or given.isdigit() else None


class _Stdin:
    """srun's stdin, read once (from the first task that asks for it) and sent whole to each task
    that reads it."""

    def __init__(self) -> None:
        import threading
        self.chunks: list[bytes] = []
        self.ended = False
        self.cond = threading.Condition()
        self.started = False

    def _read(self) -> None:
        try:
            while chunk := os.read(0, 65536):
                with self.cond:
                    self.chunks.append(chunk)
                    self.cond.notify_all()
        except OSError:
            pass
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def send(self, conn, gone: Callable[[], bool]) -> None:  # noqa: ANN001 - a task's `in` stream
        """Everything read so far and what follows, then the end; stops when `gone()` (its task ended)."""
        import socket

        from slurmlet.cli.common import start_thread
        with self.cond:
            if not self.started:
                self.started = True
                start_thread(self._read)
        sent = 0
        try:
            while True:
                with self.cond:
                    while sent == len(self.chunks) and not self.ended:
                        if gone():
                            return
                        self.cond.wait(0.5)
                    new, ended = self.chunks[sent:], self.ended
                for chunk in new:
                    conn.sendall(chunk)
                sent += len(new)
                if ended and sent == len(self.chunks):
                    conn.shutdown(socket.SHUT_WR)
                    return
        except OSError:
            return


def _listener():  # noqa: ANN202 - a listening socket
    """Where the step's tasks connect to stream their output and exit codes: any port, every address."""
    import socket
    srv = socket.socket()
    srv.bind(("0.0.0.0", 0))
    srv.listen(256)
    return srv


def _hosts(expr: object) -> list[str]:
    if not expr:
        return []
    import hostlist
    return hostlist.expand_hostlist(str(expr))


def _signame(sig: int) -> str:
    import signal
    names: dict[int, str] = {signal.SIGKILL: "Killed", signal.SIGTERM: "Terminated",
                             signal.SIGSEGV: "Segmentation fault", signal.SIGABRT: "Aborted"}
    return names.get(sig, f"Killed by signal {sig}")


def tasks_line(step: str, ranks: list[int], what: str) -> str:
    """srun's line on the step's tasks in one state: `srun: StepId=J.S tasks 3-4: running`."""
    from slurmlet.common.grammar import fmt_ranges
    return f"srun: StepId={step} task{'s' if len(ranks) > 1 else ''} {fmt_ranges(ranks)}: {what}"


class _StepIO:
    """Collects the tasks' output (labelled with -l) and exit codes sent by the agents."""

    def __init__(self, srv, ranks: set[int], label: bool, unbuffered: bool = False,  # noqa: ANN001 - a socket
                 pty: bool = False):
        import threading
        self.srv = srv
        self.ranks = ranks  #: the step's tasks: an exit is taken once from each, and from no other
        self.ntasks = len(ranks)
        self.pty = pty  #: whether a task's terminal may be relayed (its stream reads what is typed)
        self.label = label
        self.unbuffered = unbuffered and not label  # -u: bytes as they come (labels need whole lines)
        self.on_bad_exit: Callable[[], object] | None = None
        #: srun -W: (seconds, what kills the tasks still running) once the first task ended
        self.max_wait: tuple[int, Callable[[], object]] | None = None
        self.first_exit: float | None = None  #: when the first task's end came (time.monotonic())
        import socket
        self.wake_r, self.wake_w = socket.socketpair()  # a task's exit wakes the accept loop at once
        self.exits: dict[int, tuple[int, int, str]] = {}
        self.oom: set[int] = set()  #: ranks the kernel killed for their cgroup's memory limit
        self.lock = threading.Lock()
        self.cancelled = False
        self.aborted = False  #: srun said that its step was cancelled (by scancel)
        self.interrupted = False  #: srun sent its tasks a second Ctrl-C's SIGINT
        self.step = ""  #: JOB.STEP
        self.stdin = _Stdin()  #: for the tasks that read srun's stdin (--input)

    def run(self, step_over) -> None:  # noqa: ANN001 - a callable asking the controller
        import selectors
        import time

        from slurmlet.cli.common import start_thread
        sel = selectors.DefaultSelector()
        sel.register(self.srv, selectors.EVENT_READ)
        sel.register(self.wake_r, selectors.EVENT_READ)
        workers: list = []
        last_check = time.monotonic()
        over_since: float | None = None
        while len(self.exits) < self.ntasks:
            for key, _ in sel.select(0.5):
                if key.fileobj is self.wake_r:
                    self.wake_r.recv(4096)
                    continue
                conn, _ = self.srv.accept()
                workers.append(start_thread(self._serve, conn))
            now = time.monotonic()
            if self.max_wait and self.first_exit is not None and now - self.first_exit >= self.max_wait[0]:
                self._wait_over()
            if now - last_check > 1.0:  # a node that died never reports: ask the controller
                last_check = now
                try:
                    if step_over():
                        over_since = over_since or now
                except Exception:  # noqa: BLE001
                    pass
                if over_since is not None and now - over_since > 3.0:
                    break
        # every stream was closed before its task's exit was sent (nodeagent/steps.py): what is left is
        # reading what came, which a loaded machine may take a while to get to
        for t in workers:
            t.join(60)
        self.srv.close()

    def _wait_over(self) -> None:
        """srun -W's time since the first task's end is up: say which tasks are in which state, as
        22.05's srun does, and kill those still running."""
        assert self.max_wait is not None
        wait, kill = self.max_wait
        self.max_wait = None
        with self.lock:
            exits = dict(self.exits)
        groups = (("running", [r for r in self.ranks if r not in exits]),
                  ("exited abnormally", [r for r, (code, sig, _) in exits.items() if code or sig]),
                  ("exited", [r for r, (code, sig, _) in exits.items() if not (code or sig)]))
        lines = [f"srun: First task exited {wait}s ago"]
        lines += [tasks_line(self.step, ranks, what) for what, ranks in groups if ranks]
        lines.append(f"srun: launch/slurm: _step_signal: Terminating StepId={self.step}")
        sys.stderr.write("".join(line + "\n" for line in lines))
        sys.stderr.flush()
        try:
            kill()
        except Exception:  # noqa: BLE001 - the step may be over already
            pass

    def _serve(self, conn) -> None:  # noqa: ANN001 - an accepted socket
        with conn:
            f = conn.makefile("rb")
            head = streamhead.read(f.readline(65536))
            rank, stream = head.get("rank", 0), head.get("stream")
            if not isinstance(rank, int) or stream not in ("out", "err", "exit", "pty", "aborted", "in"):
                return  # (anyone may connect: what is no task's stream is dropped)
            if stream == "in":
                if rank in self.ranks:
                    self.stdin.send(conn, lambda: rank in self.exits or self.cancelled)
                return
            if stream == "aborted":  # scancel JOB.STEP (the agents kill its tasks at once)
                wait = head.get("wait")
                with self.lock:
                    if not self.aborted and isinstance(wait, int):
                        self.aborted = True
                        sys.stderr.buffer.write(f"srun: Job step aborted: Waiting up to {wait} seconds for job "
                                                f"step to finish.\n".encode())
                        sys.stderr.buffer.flush()
                return
            if stream == "pty":
                with self.lock:
                    ours, self.pty = self.pty and rank == 0, False  # (one terminal, --pty's)
                if ours:
                    self._terminal(conn, f)
                return
            if stream == "exit":
                if not all(isinstance(head.get(k, 0), int) for k in ("code", "signal")):
                    return  # (no agent's: dropped)
                with self.lock:
                    if rank not in self.ranks or rank in self.exits:
                        return  # (no task's, or its second: dropped)
                    self.exits[rank] = code = (int(head.get("code") or 0), int(head.get("signal") or 0),
                                               head.get("node", "?"))
                    if head.get("oom"):
                        self.oom.add(rank)
                    if self.first_exit is None:
                        import time
                        self.first_exit = time.monotonic()
                    hook, bad = self.on_bad_exit, code[0] or code[1]
                    if hook and bad:
                        self.on_bad_exit = None
                self.wake_w.send(b"x")
                if hook and bad:
                    try:
                        hook()
                    except Exception:  # noqa: BLE001 - the step may be over already
                        pass
                return
            out = sys.stdout.buffer if stream == "out" else sys.stderr.buffer
            prefix = f"{rank}: ".encode() if self.label else b""
            pending = b""
            while True:
                chunk = f.read1(65536)
                if not chunk:
                    break
                if self.unbuffered:
                    with self.lock:
                        out.write(chunk)
                        out.flush()
                    continue
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if lines:
                    with self.lock:
                        out.write(b"".join(prefix + line + b"\n" for line in lines))
                        out.flush()
            if pending:
                with self.lock:
                    out.write(prefix + pending)
                    out.flush()


    @staticmethod
    def _terminal(conn, f) -> None:  # noqa: ANN001 - the task's terminal: a socket and its reader
        """srun --pty: what the task's terminal prints goes to stdout as it comes; what is typed goes
        there in frames (nodeagent/ptyrelay.py), and so does the window's size, now and when it changes."""
        import struct
        import threading

        from slurmlet.cli.common import start_thread
        lock = threading.Lock()

        def send(kind: bytes, data: bytes) -> None:
            with lock:
                conn.sendall(kind + struct.pack(">I", len(data)) + data)

        def winch() -> None:
            try:
                send(b"w", struct.pack(">HH", *_winsize()))
            except OSError:
                pass

        def typed() -> None:
            try:
                while True:
                    data = os.read(0, 4096)
                    if not data:
                        return
                    send(b"d", data)
            except OSError:
                return
        winch()
        _ON_WINCH.append(winch)
        start_thread(typed)
        out = sys.stdout.buffer
        while True:
            chunk = f.read1(65536)
            if not chunk:
                break
            out.write(chunk)
            out.flush()
        _ON_WINCH.clear()


def own_environment(job: dict, submit: dict, env: dict[str, str]) -> dict[str, str]:
    """What srun passes its step in an allocation of its own (pure): salloc's variables, less the
    SLURM_NODE_ALIASES that only sbatch and salloc set, as 22.05's srun outside an allocation
    (tests/data/envtable)."""
    from slurmlet.cli.salloc import allocation_environment
    out = allocation_environment(job, submit, env)
    out.pop("SLURM_NODE_ALIASES", None)  # (a heterogeneous job's has none)
    return out


def _allocate_and_run(req: dict) -> int:
    """Outside an allocation, as Slurm's srun: an allocation of its own (as salloc's), the command
    run as its step 0, the allocation released with the step's exit code. The tasks stream their
    output and exit codes to this srun over the network: to $SLURMLET_SRUN_ADDR, else to this host's
    name (the nodes must resolve it: a login node's name does)."""
    from slurmlet.cli import http
    from slurmlet.cli.common import current_user
    from slurmlet.cli.opts import SALLOC_HOLDER, build_submit
    from slurmlet.cli.salloc import Allocation
    o = dict(req["opts"])
    o.pop("input", None)  # (the tasks' stdin: the allocation's holder reads none)
    env = req["environment"] if req.get("environment") is not None else dict(os.environ)
    body = build_submit(o, script=SALLOC_HOLDER, default_name=os.path.basename(req["command"][0]), script_args=[],
                        env=env, cwd=os.getcwd(), user=current_user(), uid=os.getuid(),
                        gid=os.getgid(), group=str(os.getgid()), host=os.uname().nodename, now=None, prog="srun")
    if len(req.get("groups") or ()) > 1:  # `srun A : B`: a heterogeneous job, a component per group
        body["het"] = []
        for r in req["groups"][1:]:
            body["het"].append(build_submit(
                dict(r["opts"]), script=SALLOC_HOLDER, default_name=body["name"], script_args=[], env=env,
                cwd=os.getcwd(), user=current_user(), uid=os.getuid(), gid=os.getgid(), group=str(os.getgid()),
                host=os.uname().nodename, now=None, prog="srun"))
    for part in [body, *(body.get("het") or [])]:
        part.update(interactive=True, srun_step=True, requeue=False, stdout="/dev/null", stderr="/dev/null")
    body["interactive"] = True  # its holder is no batch step: the job's steps are srun's
    body["srun_step"] = True  # and its step 0's end is the job's (controller/store/steps.py)
    body["requeue"] = False  # Slurm never requeues an srun's job (its srun would wait on)
    body["stdout"] = body["stderr"] = "/dev/null"
    # from its submission on, Ctrl-C, SIGTERM and SIGHUP (its terminal gone) give the allocation back
    # whenever they come: one during the submission once it is made, one while its step is being made
    # once the step exists (while it waits, Allocation.wait_granted's handlers answer)
    intr = _Interrupt(hangup=True)
    try:
        job_id = http.submit_once("/api/v1/jobs", body)["job_id"]
    except http.ControllerError as e:
        for line in e.pre:
            print(f"srun: error: {line}", file=sys.stderr)
        print(f"srun: error: Unable to allocate resources: {e.error}", file=sys.stderr)
        return e.code or 1
    intr.arm(lambda: http.request("POST", "/api/v1/jobs/cancel", {"ids": [job_id], "uid": os.getuid()}))
    given_back = False
    try:  # whatever else ends this srun (an error) gives the allocation back
        # what the step needs (its streams' sockets and threads; the signal handlers) is loaded now,
        # while the controller places the job and its node starts it, rather than after
        import selectors  # noqa: F401
        import socket
        import threading  # noqa: F401
        def say(line: str) -> None:
            if "quiet" not in o:
                print(f"srun: {line}", file=sys.stderr, flush=True)
        job = Allocation(job_id, say, prog="srun").wait_granted(req["immediate"])
        if job is None:
            given_back = True
            return 1
        if req["pty"]:
            _pty_setup()
        host = os.environ.get("SLURMLET_SRUN_ADDR") or socket.gethostname()
        worst = _step(req, job_id, own_environment(job, body, env), host, own=True, intr=intr)
        given_back = True
        # the nodes' reports of step 0's end end the allocation too (controller/store/steps.py): one
        # long-poll for that; one still running after it (a report lost with its node) is given back
        try:
            job = http.request("GET", f"/api/v1/jobs/{job_id}?wait=10", timeout=40)
            if job.get("state") in ("RUNNING", "SUSPENDED"):
                try:
                    http.request("POST", f"/api/v1/jobs/{job_id}/complete", {"exit_code": min(255, worst)})
                    return worst
                except http.ControllerError:  # it ended meanwhile
                    job = http.request("GET", f"/api/v1/jobs/{job_id}?wait=30", timeout=60)
        except (http.Unreachable, http.ControllerError) as e:
            print(f"srun: error: {getattr(e, 'error', None) or e}", file=sys.stderr)
            return worst or 1
    finally:
        if not given_back:
            try:
                http.request("POST", "/api/v1/jobs/cancel", {"ids": [job_id], "uid": os.getuid()})
            except Exception:  # noqa: BLE001 - the controller's own checks end it
                pass
    if job.get("state") == "NODE_FAIL":
        down = [n["name"] for n in http.request("GET", "/api/v1/nodes")["nodes"]
                if n["name"] in job.get("node_list", []) and n["state"].startswith("DOWN")]
        import hostlist
        print(f"srun: error: Node failure on {hostlist.collect_hostlist(down or job.get('node_list', []))}",
              file=sys.stderr)
    if worst:
        return worst
    if job.get("state") not in ("COMPLETED", "RUNNING", "COMPLETING"):
        return job.get("exit_code") or 1
    return 0
