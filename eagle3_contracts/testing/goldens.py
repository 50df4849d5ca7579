"""Golden snapshots of captures: a syrupy extension writing one JSON file per case.

``GoldenExtension`` stores each assertion as ``goldens/<test module path>/<test name>.json``
at the top of the repository (``tests/capture/test_x.py`` -> ``goldens/capture/test_x/``; a
leading ``goldens/`` folder inside ``tests/`` is not repeated). A record is a JSON object;
this module fixes no schema beyond two rules:

* every value compares **exactly** (order of lists, layer ids, identities, shapes, dtypes,
  strings), except
* numbers inside a ``"stats"`` object, which compare with a relative tolerance chosen by the
  ``"dtype"`` of the nearest enclosing object that has one (``DTYPE_RTOL``); a stat may also
  differ by ``rtol * rms`` where the enclosing object gives ``"shape"`` and ``stats.norm``
  (so a mean near zero does not demand impossible relative precision).

A mismatch is rendered as one line per difference naming where it is
(``segment 2 (layer_id 3): identified: golden 3, received 2``). Use it through the ``golden``
fixture of ``eagle3_contracts.testing.goldens_plugin`` or directly:
``snapshot.use_extension(GoldenExtension)``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation
    from syrupy.types import PropertyFilter, PropertyMatcher, SerializableData

GOLDEN_KEY = "eagle3_golden"
"""First key of every golden file; its value is ``GOLDEN_FORMAT``. Marks files this extension owns."""
GOLDEN_FORMAT = 1

STATS_KEY = "stats"
"""Objects under this key hold tolerant statistics; everything else compares exactly."""

DTYPE_RTOL: Mapping[str, float] = {
    "float64": 1e-7,  # bounded by the SIGNIFICANT_DIGITS stored
    "float32": 1e-4,  # covers BLAS/CPU-ISA differences between machines, not a changed layer
    "float16": 5e-3,  # ~5 ulp at 1.0 (eps 9.8e-4)
    "bfloat16": 3e-2,  # ~4 ulp at 1.0 (eps 7.8e-3)
}
"""Relative tolerance of ``stats`` by dtype name (as ``str(torch.dtype)`` without ``torch.``)."""

SIGNIFICANT_DIGITS = 8
"""Floats under ``stats`` are stored with this many significant digits (comparison is tolerant)."""

Path_ = tuple[str | int, ...]


def _dotted(path: Path_) -> str:
    return ".".join(str(p) for p in path) or "the top level"


# -- serialization ----------------------------------------------------------------------
def to_record(data: Any) -> dict[str, Any]:
    """A JSON-ready golden record from a mapping or an object with ``to_golden()``."""
    if hasattr(data, "to_golden"):
        data = data.to_golden()
    if not isinstance(data, Mapping):
        raise TypeError(
            f"a golden record must be a mapping (or have to_golden()), got {type(data).__name__}"
        )
    if GOLDEN_KEY in data and data[GOLDEN_KEY] != GOLDEN_FORMAT:
        raise TypeError(f"{GOLDEN_KEY} is reserved for the golden format ({GOLDEN_FORMAT})")
    body = {k: v for k, v in data.items() if k != GOLDEN_KEY}
    return {GOLDEN_KEY: GOLDEN_FORMAT, **_plain(body, (), in_stats=False)}


def _plain(value: Any, path: Path_, *, in_stats: bool) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}") if in_stats else value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"golden key {key!r} at {_dotted(path)} must be a string")
            out[key] = _plain(item, (*path, key), in_stats=in_stats or key == STATS_KEY)
        return out
    if isinstance(value, Sequence):
        return [_plain(v, (*path, i), in_stats=in_stats) for i, v in enumerate(value)]
    if hasattr(value, "item") and callable(value.item):  # a 0-d tensor or numpy scalar
        return _plain(value.item(), path, in_stats=in_stats)
    raise TypeError(
        f"golden value at {_dotted(path)} is a {type(value).__name__}; convert it to JSON "
        f"(numbers, strings, lists, objects) first"
    )


def dumps(record: Mapping[str, Any]) -> str:
    """Stable JSON text: objects one key a line, lists of scalars on one line."""
    return _dump(record, 0, inline=False) + "\n"


def _dump(value: Any, indent: int, *, inline: bool = True) -> str:
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(value, dict):
        if not value:
            return "{}"
        if inline and all(not isinstance(v, (dict, list)) for v in value.values()):
            flat = (
                "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in value.items()) + "}"
            )
            if len(flat) + indent <= 96:
                return flat
        items = [f"{inner}{json.dumps(k)}: {_dump(v, indent + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return "[" + ", ".join(json.dumps(v) for v in value) + "]"
        items = [f"{inner}{_dump(v, indent + 2)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return json.dumps(value)


# -- comparison -------------------------------------------------------------------------
@dataclass(frozen=True)
class Drift:
    """One difference between a golden record and a received one."""

    where: str  # "segment 2 (layer_id 3)", "contract", "record"
    field: str  # dotted path inside ``where``: "identified", "stats.norm"
    golden: Any
    received: Any
    note: str = ""  # why a number is out of tolerance, or what is missing

    def __str__(self) -> str:
        head = f"{self.where}: {self.field}" if self.field else self.where
        text = f"{head}: golden {_show(self.golden)}, received {_show(self.received)}"
        return f"{text} ({self.note})" if self.note else text


_MISSING = object()


def _absent(received: Any) -> str:
    """The note of a part present on one side only (``received`` is ``_MISSING`` or not)."""
    return "only in the golden" if received is _MISSING else "not in the golden"


SHOWN_CHARS = 80
"""Longer values are cut in drift lines (the golden file and the record hold them whole)."""


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    text = "{...}" if isinstance(value, dict) else json.dumps(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def compare_records(
    golden: Mapping[str, Any],
    received: Mapping[str, Any],
    *,
    rtol: Mapping[str, float] = DTYPE_RTOL,
) -> tuple[Drift, ...]:
    """Every difference between two records (empty when they match), in record order."""
    return tuple(_compare(golden, received, "record", (), None, rtol))


def _compare(
    golden: Any,
    received: Any,
    where: str,
    field: tuple[str, ...],
    context: Mapping[str, Any] | None,
    rtol: Mapping[str, float],
) -> Iterator[Drift]:
    """Walk both values; ``where`` names the record part, ``field`` the path inside it."""
    if isinstance(golden, dict) and isinstance(received, dict):
        yield from _compare_dicts(golden, received, where, field, context, rtol)
    elif (
        isinstance(golden, list)
        and isinstance(received, list)
        and all(isinstance(v, dict) for v in (*golden, *received))
    ):
        yield from _compare_items(golden, received, where, field, context, rtol)
    elif not _same(golden, received):
        yield Drift(where, ".".join(field), golden, received)


def _compare_dicts(
    golden: dict[str, Any],
    received: dict[str, Any],
    where: str,
    field: tuple[str, ...],
    context: Mapping[str, Any] | None,
    rtol: Mapping[str, float],
) -> Iterator[Drift]:
    """Key by key, golden order first; at the top each key is a record part of its own."""
    top = where == "record"
    context = golden if "dtype" in golden else context
    for key in [*golden, *(k for k in received if k not in golden)]:
        g, r = golden.get(key, _MISSING), received.get(key, _MISSING)
        sub_where, sub_field = (key, ()) if top else (where, (*field, key))
        if g is _MISSING or r is _MISSING:
            yield Drift(sub_where, ".".join(sub_field), g, r, _absent(r))
        elif key == STATS_KEY and isinstance(g, dict) and isinstance(r, dict):
            yield from _compare_stats(g, r, sub_where, sub_field, context, rtol)
        else:
            yield from _compare(g, r, sub_where, sub_field, context, rtol)


def _compare_items(
    golden: list[dict[str, Any]],
    received: list[dict[str, Any]],
    where: str,
    field: tuple[str, ...],
    context: Mapping[str, Any] | None,
    rtol: Mapping[str, float],
) -> Iterator[Drift]:
    """A list of parts (segments, plans) item by item, each named by what identifies it."""
    noun = field[-1] if field else where
    noun = noun[:-1] if noun.endswith("s") and len(noun) > 1 else noun
    for i in range(max(len(golden), len(received))):
        g = golden[i] if i < len(golden) else _MISSING
        r = received[i] if i < len(received) else _MISSING
        item_where = (f"{where}, " if field else "") + _item_label(noun, i, g, r)
        if g is _MISSING or r is _MISSING:
            yield Drift(item_where, "", g, r, _absent(r))
        else:
            yield from _compare(g, r, item_where, (), context, rtol)


def _same(a: Any, b: Any) -> bool:
    """Exact equality that tells 1 from 1.0 and True from 1, and lets NaN equal NaN."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    return a == b or _both_nan(a, b)


def _both_nan(a: Any, b: Any) -> bool:
    return isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)


def _item_label(noun: str, index: int, golden: Any, received: Any) -> str:
    """``segment 2 (layer_id 3)``, ``plan 3 (sglang)``: an index plus what identifies it."""
    item = golden if isinstance(golden, dict) else received
    if not isinstance(item, dict):
        return f"{noun} {index}"
    ids = [f"layer_id {json.dumps(item['layer_id'])}"] if "layer_id" in item else []
    ids += [str(item[k]) for k in ("name", "example", "system", "convention") if k in item]
    return f"{noun} {index}" + (f" ({', '.join(ids)})" if ids else "")


def _compare_stats(
    golden: dict[str, Any],
    received: dict[str, Any],
    where: str,
    field: tuple[str, ...],
    context: Mapping[str, Any] | None,
    rtol_table: Mapping[str, float],
) -> Iterator[Drift]:
    """Numbers within ``rtol`` of the enclosing dtype (or ``rtol * rms``); others exactly."""
    dtype = context.get("dtype") if context else None
    rtol = rtol_table.get(dtype, 0.0) if isinstance(dtype, str) else 0.0
    scale = _rms(golden, context)
    for key in [*golden, *(k for k in received if k not in golden)]:
        g, r = golden.get(key, _MISSING), received.get(key, _MISSING)
        name = ".".join((*field, key))
        if g is _MISSING or r is _MISSING:
            yield Drift(where, name, g, r, _absent(r))
            continue
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (g, r)):
            if not _same(g, r):
                yield Drift(where, name, g, r)
            continue
        if g == r or _both_nan(float(g), float(r)):
            continue
        allowed = rtol * max(abs(g), abs(r), scale)
        if not abs(g - r) <= allowed:  # also true for NaN against a number
            rel = abs(g - r) / max(abs(g), abs(r), scale, 1e-300)
            basis = (
                f"for {dtype}"
                if dtype in rtol_table
                else f"no tolerance: dtype {dtype!r} is not in rtol"
            )
            yield Drift(
                where, name, g, r, f"relative difference {rel:.1e} > rtol {rtol:.0e} {basis}"
            )


def _rms(stats: Mapping[str, Any], context: Mapping[str, Any] | None) -> float:
    norm = stats.get("norm")
    shape = context.get("shape") if context else None
    if not isinstance(norm, (int, float)) or not isinstance(shape, list) or not shape:
        return 0.0
    numel = math.prod(int(s) for s in shape if isinstance(s, int))
    return abs(float(norm)) / math.sqrt(numel) if numel > 0 else 0.0


IDENTITY_FIELDS = frozenset({"layer_id", "identified", "near_miss", "system", "layer_ids"})
"""Fields whose drift makes the same part's stats drift a consequence, not news."""


def render_drift(drifts: Sequence[Drift]) -> list[str]:
    """Human lines for a list of drifts: what a failing golden assertion prints.

    Short enough for pytest's untruncated assertion report: stats of a part whose identity
    already drifted are counted, not listed; exact differences come before numeric ones.
    """
    changed = {d.where for d in drifts if d.field in IDENTITY_FIELDS}
    shown = [d for d in drifts if not (d.where in changed and d.field.startswith(STATS_KEY))]
    hidden = len(drifts) - len(shown)
    shown.sort(key=lambda d: d.field.startswith(STATS_KEY))  # stable: record order kept
    head = f"golden drift: {len(shown)} difference(s)"
    if hidden:
        head += f" (+{hidden} stats of those segments)"
    return [head, *(f"  {d}" for d in shown)]


def _user_matcher(matcher: Any) -> Any:
    """The caller's matcher: syrupy always passes a wrapper closing over the assertion, whose
    ``_matcher`` is what the user gave (``None`` when nothing)."""
    for cell in getattr(matcher, "__closure__", None) or ():
        try:
            owner = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if hasattr(owner, "_matcher") and hasattr(owner, "_exclude"):
            return owner._matcher
    return matcher


def _parse(text: Any) -> tuple[dict[str, Any] | None, str]:
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        return None, f"not valid JSON ({exc})"
    if not isinstance(data, dict) or data.get(GOLDEN_KEY) != GOLDEN_FORMAT:
        return None, f"not a golden record (no {GOLDEN_KEY!r}: {GOLDEN_FORMAT})"
    return data, ""


# -- the syrupy extension ---------------------------------------------------------------
MISSING_GOLDEN = (
    "no golden stored yet: write it with `pytest --snapshot-update -n 0` (serially), then "
    "review `git diff goldens/`"
)
"""What a comparison with a golden that was never written says (the diff and the helpers)."""


class GoldenExtension(SingleFileSnapshotExtension):
    """syrupy extension: one JSON golden per assertion under the top-level ``goldens/``.

    Override ``rtol`` (a dtype -> tolerance mapping) or ``goldens_dirname`` in a subclass to
    change the tolerances or the folder.
    """

    _write_mode = WriteMode.TEXT
    file_extension = "json"
    goldens_dirname: ClassVar[str] = "goldens"
    tests_dirnames: ClassVar[tuple[str, ...]] = ("tests", "test")
    root: ClassVar[Path | None] = None  # set to pytest's rootdir by the plugin; bounds the search
    rtol: ClassVar[Mapping[str, float]] = DTYPE_RTOL

    # -- layout ---------------------------------------------------------------------------
    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(golden_dir(Path(test_location.filepath), cls))

    def owns_snapshot_collection(self, *, filepath: str, test_location: PyTestLocation) -> bool:
        if not super().owns_snapshot_collection(filepath=filepath, test_location=test_location):
            return False
        try:
            with open(filepath, "rb") as f:
                head = f.read(64)
        except OSError:
            return False
        return head.replace(b" ", b"").startswith(b'{\n"' + GOLDEN_KEY.encode() + b'":')

    def delete_snapshots(self, *, snapshot_location: str, snapshot_names: set[str]) -> None:
        path = Path(snapshot_location)
        path.unlink()
        if path.parent.is_dir() and not any(path.parent.iterdir()):
            path.parent.rmdir()

    # -- data -----------------------------------------------------------------------------
    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> str:
        """The golden JSON of ``data``. syrupy's ``exclude``/``include``/``matcher`` are refused
        loudly (``TypeError``): a golden compares identity and order exactly and statistics by
        dtype, so silently dropping or rewriting properties would pass what must fail."""
        given = [
            name
            for name, value in (
                ("exclude", exclude),
                ("include", include),
                ("matcher", _user_matcher(matcher)),
            )
            if value is not None
        ]
        if given:
            raise TypeError(
                f"{type(self).__name__} does not apply syrupy's {'/'.join(given)}: a golden "
                f"records identity and order exactly and compares statistics by dtype; drop "
                f"{'/'.join(given)}, or remove the fields from the record before asserting"
            )
        return dumps(to_record(data))

    def matches(self, *, serialized_data: Any, snapshot_data: Any) -> bool:
        golden, _ = _parse(snapshot_data)
        received, _ = _parse(serialized_data)
        if golden is None or received is None:
            return False
        return not compare_records(golden, received, rtol=self.rtol)

    def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Iterator[str]:
        if not snapshot_data:
            yield MISSING_GOLDEN
            return
        golden, why = _parse(snapshot_data)
        if golden is None:
            yield f"the stored golden is {why}; regenerate it with --snapshot-update -n 0"
            return
        received, why = _parse(serialized_data)
        if received is None:
            yield f"the received record is {why}"
            return
        yield from render_drift(compare_records(golden, received, rtol=self.rtol))

    def drift(self, received: Any, golden_text: str) -> tuple[Drift, ...]:
        """Differences between ``received`` (a record) and a stored golden's text."""
        golden, why = _parse(golden_text)
        if golden is None:
            raise ValueError(f"the golden is {why}")
        return compare_records(golden, to_record(received), rtol=self.rtol)


def golden_dir(test_file: Path, extension: type[GoldenExtension] = GoldenExtension) -> Path:
    """Folder holding the goldens of the test module ``test_file``.

    ``<repo>/tests/a/test_b.py`` -> ``<repo>/goldens/a/test_b``; a first folder named like the
    goldens folder is dropped (``tests/goldens/a/test_b.py`` -> ``goldens/a/test_b``). Without
    a ``tests`` ancestor (below ``extension.root`` when set) the goldens sit next to the module.
    """
    test_file = test_file.absolute()
    root = extension.root.absolute() if extension.root is not None else None
    for parent in test_file.parents:
        if root is not None and not parent.is_relative_to(root):
            break
        if parent.name in extension.tests_dirnames:
            parts = test_file.relative_to(parent).with_suffix("").parts
            if len(parts) > 1 and parts[0] == extension.goldens_dirname:
                parts = parts[1:]
            return parent.parent.joinpath(extension.goldens_dirname, *parts)
    return test_file.parent / extension.goldens_dirname / test_file.stem
