"""The studio: runs, what waits for you, a run's graph and steps, and the forms that steer it.

Served by `thinkgraph serve` (and `thinkgraph studio`) under ``/studio``, from this
server's own process, with nothing from the network:

    GET  /studio                              the runs (filter by status and graph, search
                                              by thread or task, paged by links) and the
                                              "Waiting for you" inbox of every paused run
    GET  /studio/runs/{thread}                a run: what it waits for, with a form per
                                              answer; its graph (our own SVG, the path,
                                              visits, the current node and the pause as
                                              classes); its checkpoints; its steps
                                              (``?node=NAME``, each drawn node's link: that
                                              node's only); its state
    GET  /studio/runs/{thread}/at/{checkpoint} the run as it stood at a checkpoint: its
                                              status, graph, steps and own state there
    POST /studio/runs/{thread}/answer         a form's answer: Approve, Edit, Respond,
                                              Reject, Continue, Retry, Abort, guidance
    POST /studio/runs/{thread}/fork           Fork from here: a new run from a checkpoint,
                                              its edits read from the form's fields
                                              (`forms.fork_of`), started on the server
    POST /studio/runs/{thread}/replay         Replay: the run replayed on the graph served
                                              now, started on the server
    GET  /studio/compare?a=RUN&b=RUN          two runs on one graph and step by step; when
                                              b replays a, the replay's report
                                              (`thinkgraph.server.studio.replays`)

Every page works without JavaScript and by keyboard: links and form POSTs. A form names
the pause it answers (``at``: its checkpoint id) and carries the CSRF token
(`thinkgraph.server.studio.csrf`): an answer to a pause that was answered already, or that
the run left, is 409 and changes nothing; a form without the token is 403. What a form
says is read as an answer by `thinkgraph.server.studio.forms`; answers go through the
server's one answer path (`ServerRuns.resume`, one answer per pause), as the JSON API's
do. A fork or a replay is started on the server (`ServerRuns.fork`, `ServerRuns.replay`)
and answered at once with its page; what is refused before it starts is answered then.
"""

from thinkgraph.server.studio.csrf import Csrf
from thinkgraph.server.studio.routes import lay_out_served_graph, studio_routes

__all__ = ["Csrf", "lay_out_served_graph", "studio_routes"]
