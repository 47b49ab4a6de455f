"""report.html's sections about the device's work: memory at the peak, GPU idle gaps, matmul shapes.

Rendered from report.json's ``memory_shape`` (a stacked bar of its
components, the lines that hold the most activations, the fixes),
``gpu_idle_gaps`` and ``matmul_shapes``; reports older than schema 1.2 lack
them and get nothing here.
"""

from __future__ import annotations

from html import escape
from typing import Any

from .sections import loc
from .svg import stacked_bar

MIB = 2**20
COMPONENTS = ("parameters", "gradients", "optimizer_state", "activations", "other")
SHAPE_ROWS = 10
MIN_PART = 0.005  # parts of the peak smaller than this are left out of the bar and the list


def _mib(n: float) -> str:
    return f"{n / MIB:,.1f}" if n >= 0.1 * MIB or n == 0 else f"{n / MIB:.3f}"


def memory_shape_html(r: dict[str, Any]) -> str:
    shape = r.get("memory_shape")
    if not shape or not shape["peak_bytes"]:
        return ""
    total = shape["peak_bytes"]
    parts = [(c, shape["components"][c] / total, f"{_mib(shape['components'][c])} MiB") for c in COMPONENTS
             if shape["components"][c] >= MIN_PART * total]
    out = f"<h2 id='memory-shape'>Memory at the peak ({_mib(total)} MiB live, step {shape['peak_step']})</h2>"
    out += stacked_bar(parts).replace("class='chart breakdown'", "class='chart memory-shape'").replace(
        "aria-label='step time breakdown'", "aria-label='memory at the peak by component'")
    notes = []
    if shape.get("optimizer_step_temporaries_bytes"):
        notes.append(f"other includes {_mib(shape['optimizer_step_temporaries_bytes'])} MiB made by the optimizer's step().")
    if shape.get("reserved_peak_bytes"):
        notes.append(f"The CUDA allocator reserved up to {_mib(shape['reserved_peak_bytes'])} MiB for at most "
                     f"{_mib(shape['allocated_peak_bytes'])} MiB allocated.")
    out += ("<p class='caption'>Tensors live at the highest point of the last recorded step: parameters, gradients and "
            "optimizer state as the optimizers hold them, activations made during that step, other the rest. "
            + escape(" ".join(notes)) + "</p>")
    items = []
    for o in shape["optimizers"]:
        items.append(f"<li>{escape(o['name'])} ({escape(o['implementation'])}): {_mib(o['state_bytes'])} MiB of state "
                     f"for {o['params']:,} parameters</li>")
    for a in [a for a in shape["activation_lines"] if a["bytes"] >= MIN_PART * total][:3]:
        items.append(f"<li>{loc(a['path'], a['line'], a['source'])} <code>{escape(a['source'])}</code>: "
                     f"{_mib(a['bytes'])} MiB of activations live at the peak</li>")
    if items:
        out += f"<ul class='evidence memory-parts'>{''.join(items)}</ul>"
    if shape["recommendations"]:
        dominant = (shape["dominant"] or "").replace("_", " ")
        recs = "".join(f"<li><strong>{escape(x['action'])}</strong><div class='why'>{escape(x['why'])}</div>"
                       + (f"<pre>{escape(x['example'])}</pre>" if x["example"] else "") + "</li>" for x in shape["recommendations"])
        out += f"<h3>If memory is the limit: {escape(dominant)} is the largest part</h3><ol class='recs'>{recs}</ol>"
    return out


def gaps_html(r: dict[str, Any]) -> str:
    gaps = r.get("gpu_idle_gaps") or []
    if not gaps:
        return ""
    rows = "".join(
        f"<tr><td>{g['step']}</td><td class='num'>{g['duration_ms']:.3f}</td>"
        f"<td>{loc(g['path'], g['line'], g['source']) if g['path'] else '<span class=empty>outside your code</span>'}</td>"
        f"<td><code>{escape(g['cpu'])}</code></td><td>{g['probes']}/5</td><td><code>{escape(g['next_kernel'])}</code></td></tr>"
        for g in gaps
    )
    return ("<h2 id='gpu-gaps'>Largest GPU idle gaps</h2><table class='gaps'><tr><th>step</th><th class='num'>idle ms</th>"
            "<th>CPU at</th><th>CPU event</th><th>probes</th><th>next kernel</th></tr>" + rows + "</table>"
            "<p class='caption'>Spans between kernels on the GPU timeline, and the main thread's innermost user line and "
            "event at five instants of each.</p>")


def shapes_html(r: dict[str, Any]) -> str:
    shapes = r.get("matmul_shapes") or []
    if not shapes:
        return ""
    gpu = r["device"] == "cuda"
    facts = r.get("device_facts") or {}
    tf32 = facts.get("allow_tf32") or facts.get("float32_matmul_precision", "highest") != "highest"
    rows = []
    for s in shapes[:SHAPE_ROWS]:
        dims = " @ ".join("\u00d7".join(map(str, d)) for d in s["dims"]) if s["op"].endswith(("mm", "addmm", "bmm")) else \
            " * ".join("\u00d7".join(map(str, d)) for d in s["dims"])
        bad = ", ".join(f"{k}={v}" for k, v in s["misaligned"].items()) if gpu else ""
        verdict = bad or ("fp32 with TF32 off: not on Tensor Cores" if s["dtype"] == "float32" and not tf32 and s["op"].endswith("mm")
                          else "aligned" if s["dtype"] in ("float16", "bfloat16", "float32") else "not a Tensor-Core dtype")
        rows.append(
            f"<tr><td><code>{escape(s['op'])}</code></td><td><code>{escape(dims)}</code></td><td>{escape(s['dtype'])}</td>"
            f"<td class='num'>{s['calls_per_step']:g}</td><td class='num'>{s['gpu_ms_per_step' if gpu else 'cpu_ms_per_step']:.3f}</td>"
            f"<td>{loc(s['path'], s['line'], s['source']) if s['path'] else ''}</td>"
            + (f"<td class='{'bad' if bad else ''}'>{escape(verdict)}</td>" if gpu else "") + "</tr>"
        )
    head = "<th>Tensor Cores</th>" if gpu else ""
    return (f"<h2 id='matmul-shapes'>Matmul and convolution shapes</h2><table class='shapes'><tr><th>op</th><th>operands</th>"
            f"<th>dtype</th><th class='num'>calls/step</th><th class='num'>{'GPU' if gpu else 'CPU'} ms/step</th><th>line</th>{head}</tr>"
            + "".join(rows) + "</table>")


def kernels_html(r: dict[str, Any]) -> str:
    table = r.get("kernels")
    if not table or not table["rows"]:
        return ""
    rows = "".join(
        f"<tr><td><code title='{escape(k['name'])}'>{escape(k['short_name'])}</code></td><td class='num'>{k['calls_per_step']:g}</td>"
        f"<td class='num'>{k['ms_per_step']:.3f}</td><td class='num'>{k['share'] * 100:.1f}%</td>"
        f"<td>{'yes' if k['tensor_cores'] else ''}</td><td>{loc(k['path'], k['line'], k['source']) if k['path'] else ''}</td></tr>"
        for k in table["rows"]
    )
    return (f"<h2 id='kernels'>GPU kernels ({table['tensor_core_share'] * 100:.0f}% of kernel time on Tensor Cores)</h2>"
            "<table class='kernels'><tr><th>kernel</th><th class='num'>calls/step</th><th class='num'>ms/step</th>"
            "<th class='num'>GPU share</th><th>Tensor Cores</th><th>launched at</th></tr>" + rows + "</table>")


def operator_shapes_html(r: dict[str, Any]) -> str:
    """``operators_by_shape`` (a trace recorded with shapes): one compact row per (op, input shapes)."""
    table = r.get("operators_by_shape")
    if not table or not table["rows"]:
        return ""
    rows = "".join(
        f"<tr><td><code>{escape(o['name'])}</code></td><td><code>{escape(o['input_shapes'])}</code></td>"
        f"<td class='num'>{o['calls_per_step']:g}</td><td class='num'>{o['self_ms_per_step']:.3f}</td>"
        f"<td class='num'>{o['total_ms_per_step']:.3f}</td><td class='num'>{o['share'] * 100:.1f}%</td></tr>"
        for o in table["rows"]
    )
    other = (f"<p class='caption'>{table['other_groups']} other groups: {table['other_calls_per_step']:g} calls, "
             f"{table['other_self_ms_per_step']:.3f} ms self per step.</p>" if table["other_groups"] else "")
    return ("<h2 id='operators-by-shape'>CPU operators by input shape</h2><table class='op-shapes'><tr><th>op</th>"
            "<th>input shapes</th><th class='num'>calls/step</th><th class='num'>self ms/step</th>"
            "<th class='num'>total ms/step</th><th class='num'>self share</th></tr>" + rows + "</table>" + other)


def ranges_html(r: dict[str, Any]) -> str:
    """``ranges`` (a trace with no stacks): the stepping thread's record_function / module ranges."""
    table = r.get("ranges")
    if not table or not table["rows"]:
        return ""
    rows = "".join(
        f"<tr><td><code>{escape(o['name'])}</code></td><td>{escape(o['parent'] or '')}</td>"
        f"<td class='num'>{o['calls_per_step']:g}</td><td class='num'>{o['ms_per_step']:.3f}</td>"
        f"<td class='num'>{o['share'] * 100:.1f}%</td><td class='num'>{o['self_ms_per_step']:.3f}</td>"
        f"<td>{_top_ops(o.get('top_ops') or [])}</td></tr>"
        for o in table["rows"]
    )
    return ("<h2 id='ranges'>record_function and module ranges (stepping thread)</h2>"
            "<p class='caption'>The trace has no Python frames or call stacks: these ranges name where the step goes.</p>"
            "<table class='ranges'><tr><th>range</th><th>inside</th><th class='num'>calls/step</th><th class='num'>ms/step</th>"
            "<th class='num'>step share</th><th class='num'>innermost ms/step</th><th>operators directly inside (own ms/step)</th></tr>"
            + rows + "</table>")


def _top_ops(ops: list[dict[str, Any]]) -> str:
    return ", ".join(f"<code>{escape(o['name'])}</code> {o['self_ms_per_step']:.3f}" for o in ops)


def device_html(r: dict[str, Any]) -> str:
    """The sections, each empty when the report has nothing for it."""
    return memory_shape_html(r) + kernels_html(r) + operator_shapes_html(r) + ranges_html(r) + gaps_html(r) + shapes_html(r)
