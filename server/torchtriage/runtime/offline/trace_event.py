"""One trace event as the analysis reads it: the fields it uses, and only the arguments it uses.

With msgspec installed, ``decode_events(text)`` decodes a run of whole events
(``[{...}, {...}]``) straight into these structs: keys the analysis never reads
(``External id``, ``Ev Idx``, flow ids...) are skipped in C, not built into
dicts, which measured 4-5x faster than ``json`` on kineto's output.  Every
field is typed ``Any``, so a value of an unexpected type reaches the analysis
as it would from ``json`` and is judged there.  Without msgspec (or for an
event that is not an object with an object ``args``), ``from_dict`` builds the
same struct from ``json``'s dict.
"""

from __future__ import annotations

from typing import Any, Optional

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec is a dependency; this keeps a bare install reading traces
    msgspec = None  # type: ignore[assignment]

ARG_KEYS = {  # attribute -> the argument's key in the trace
    "call_stack": "Call stack",
    "sequence_number": "Sequence number",
    "fwd_thread_id": "Fwd thread id",
    "input_type": "Input type",
    "input_dims": "Input Dims",
    "correlation": "correlation",
    "bytes": "Bytes",
    "total_allocated": "Total Allocated",
    "addr": "Addr",
    "device_type": "Device Type",
}
EVENT_KEYS = ("ph", "cat", "name", "pid", "tid", "ts", "dur")

if msgspec is not None:
    class EventArgs(msgspec.Struct, frozen=True, gc=False):
        """The arguments the analysis reads (None: absent)."""

        call_stack: Any = msgspec.field(default=None, name="Call stack")
        sequence_number: Any = msgspec.field(default=None, name="Sequence number")
        fwd_thread_id: Any = msgspec.field(default=None, name="Fwd thread id")
        input_type: Any = msgspec.field(default=None, name="Input type")
        input_dims: Any = msgspec.field(default=None, name="Input Dims")
        correlation: Any = None
        bytes: Any = msgspec.field(default=None, name="Bytes")
        total_allocated: Any = msgspec.field(default=None, name="Total Allocated")
        addr: Any = msgspec.field(default=None, name="Addr")
        device_type: Any = msgspec.field(default=None, name="Device Type")

    NO_ARGS = EventArgs()

    class TraceEvent(msgspec.Struct, frozen=True, gc=False):
        """A chrome-trace event's fields (None: absent)."""

        ph: Any = None
        cat: Any = None
        name: Any = None
        pid: Any = None
        tid: Any = None
        ts: Any = None
        dur: Any = None
        args: EventArgs = NO_ARGS

    _DECODER = msgspec.json.Decoder(list[TraceEvent])
    _ERRORS: tuple[type[Exception], ...] = (msgspec.DecodeError, msgspec.ValidationError)

    def decode_events(text: str) -> Optional[list[TraceEvent]]:
        """The events of ``text``, a JSON list of event objects; None when it is not one (decode it another way)."""
        try:
            return _DECODER.decode(text)
        except _ERRORS:
            return None
else:  # pragma: no cover - exercised by tests that hide msgspec
    class EventArgs:  # type: ignore[no-redef]
        """The arguments the analysis reads (None: absent)."""

        __slots__ = tuple(ARG_KEYS)

        def __init__(self, **values: Any) -> None:
            for attribute in ARG_KEYS:
                setattr(self, attribute, values.get(attribute))

    NO_ARGS = EventArgs()

    class TraceEvent:  # type: ignore[no-redef]
        """A chrome-trace event's fields (None: absent)."""

        __slots__ = EVENT_KEYS + ("args",)

        def __init__(self, args: Any = NO_ARGS, **values: Any) -> None:
            for key in EVENT_KEYS:
                setattr(self, key, values.get(key))
            self.args = args

    def decode_events(text: str) -> Optional[list[TraceEvent]]:  # type: ignore[misc]
        """Without msgspec there is no fast decoder: the caller decodes event by event."""
        return None


FAST = msgspec is not None


def from_dict(event: Any) -> Optional[TraceEvent]:
    """The struct for one event ``json`` decoded (None: not an object, so not an event)."""
    if not isinstance(event, dict):
        return None
    args = event.get("args")
    fields = {key: event.get(key) for key in EVENT_KEYS}
    if isinstance(args, dict):
        return TraceEvent(args=EventArgs(**{attribute: args.get(key) for attribute, key in ARG_KEYS.items()}), **fields)
    return TraceEvent(**fields)
