"""How the CLI's requests may travel: bodies as Python literals.

The CLI writes a request body with `ascii()` (no import at all, where the standard library's `json`
brings `re` along: several milliseconds of every command) and sends it as LITERAL; the controller
reads it as `ast.literal_eval` does, which evaluates nothing but literals (strings, numbers, tuples,
lists, dicts, sets, booleans, None: no names, calls or operators), and hands the routes JSON. Most
of the CLI's bodies it reads with json's parser once their quotes and names are changed
(controller/literal.py: about 40 us for a 2.7 kB submission, where literal_eval takes 300).
Bodies over LITERAL_MAX bytes go as JSON (literal_eval's parse costs up to ~2.5 us and ~0.5 kB of
memory a byte, where JSON's costs a tenth), and so do bodies with a float JSON has no literal for
(inf, nan: the controller's checks then name the field).
"""

LITERAL = "application/x-python-literal"
LITERAL_MAX = 32 << 10

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
