// The dashboard's event stream, followed from a worker (app.js starts it): a stream the page itself
// held open would keep it from ever being idle on the network, and tools that wait for that would
// wait for ever. What the stream says goes to the page as messages.
"use strict";

const events = new EventSource("/api/v1/events");
events.addEventListener("change", (e) => postMessage({ kind: "change", data: e.data }));
events.onopen = () => postMessage({ kind: "open" });
events.onerror = () => postMessage({ kind: "error" });
