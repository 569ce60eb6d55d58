"""What the CLI, the agents and the controller must agree on about requests and answers: content
types, and the controller's request spool on this host (controller/spool.py, cli/http.py).

Requests are JSON (the CLI writes them with cli/jsonwrite.py, which imports nothing); answers are
JSON, or marshal for a client on this host that asks for it (controller/gate.py decides, in one place).
"""

JSON = "application/json"
#: an answer in Python's `marshal` format (format 4: JSON's values), for a spooled client that lists it
#: in its Accept: it then loads no JSON decoder (`json` brings `re` and `enum`: milliseconds a command)
MARSHAL = "application/x-marshal"

#: the largest request body the controller reads (bytes; a read carries none, the code upload has a
#: larger limit of its own: controller/api/limits.py), which every client's request must fit
MAX_BODY = 32 * 2**20
#: the most bytes of answers (output pieces, usage series) an agent puts in one sync: far under MAX_BODY
ANSWERS_BYTES = 4 << 20

#: the environment variable naming the controller's request spool on this host (`slurmlet up` exports it)
SPOOL_ENV = "SLURMLET_SPOOL"
#: the spool's shared bell (a FIFO any user may write names into), and a user's own: BELL + "." + uid
BELL = "bell"
#: a spooled request's name: this many lowercase hex digits
NAME_LEN = 32
#: the largest request a client may spool (a larger one goes by TCP)
SPOOL_MAX = 256 * 2**10
#: seconds a client waits for its spooled request to be taken before it withdraws it (then TCP)
WITHDRAW = 1.0

#: the largest squeue view the controller renders (GET /api/v1/squeue: a view is anyone's to send,
#: and its columns, widths and sort keys multiply its work and its answer by the jobs): at most
#: VIEW_CHARS characters of format or of sort, VIEW_COLUMNS columns, VIEW_LINE characters of
#: columns a line (a column without a width counts as VIEW_DEFAULT_WIDTH) and VIEW_SORTS sort keys;
#: squeue renders a larger one itself (common/render_squeue.view_bounded, cli/squeue.rendered_here)
VIEW_CHARS, VIEW_COLUMNS, VIEW_LINE, VIEW_SORTS, VIEW_DEFAULT_WIDTH = 1024, 64, 4096, 16, 20

#: the most bytes of a job's output one read carries (GET /api/v1/jobs/{id}/output, the dashboard's
#: reads): the controller asks the node's agent for at most PIECE bytes, the agent reads at most
#: PIECE, and a larger output is read a piece at a time from where the last one ended
PIECE = 256 << 10
#: the longest string in an agent's answer (NodeSync.answers: a piece in base64, 4 characters for
#: each 3 bytes or part of 3, or an error naming the output's path), which a sync accepts
ANSWER_CHARS = 4 * -(-PIECE // 3)

#: where `slurmlet up` records each local cluster it runs, under its user's home (a file per cluster,
#: named after its controller's port: its address, spool, key file, controller pid and state
#: directory, a line each); `down` removes it. The CLI without SLURMLET_CONTROLLER uses the one
#: running there, and names them all when there are several (cli/http.py)
CLUSTERS_DIR = (".slurmlet", "clusters")
#: the controller's address when nothing names one (Slurm's SlurmctldPort)
DEFAULT_PORT = 6817

#: the header a controller in standby (a backup while another holds the database's lease:
#: controller/failover.py) marks its refusals with; its value is SlurmctldTimeout in seconds: a
#: client waits up to 1.5 times that for a backup to take control, as 22.05's clients do
STANDBY = "slurmlet-standby"
#: seconds a client keeps trying when no controller answers at all (22.05's MessageTimeout)
MESSAGE_TIMEOUT = 10.0


def controller_urls(value: str) -> list[str]:
    """The controllers an address names (SLURMLET_CONTROLLER, an agent's --controller): one, or several
    separated by commas, primary first (slurm.conf's SlurmctldHost order), each `http://HOST:PORT` or
    `HOST:PORT`."""
    return [u if "://" in u else "http://" + u for u in (p.strip().rstrip("/") for p in value.split(",")) if u]
