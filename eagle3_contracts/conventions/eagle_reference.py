"""The original EAGLE code (``SafeAILab/EAGLE``): hard-coded capture layers."""

from __future__ import annotations

from eagle3_contracts.conventions._entry import Convention, DefaultRule, Meaning, OffsetRule, Role

EAGLE_REFERENCE = Convention(
    name="eagle-reference",
    system="original EAGLE (SafeAILab/EAGLE)",
    role=Role.TRAINER,
    meaning=Meaning.BOUNDARY,
    offset_rule=OffsetRule.BOUNDARY,
    id_paths=(),
    default=DefaultRule.HARD_CODED,
    concat_order="ascending",
    embedding_reachable=True,  # the loop appends before layer idx, idx = 0 is possible
    last_output_reachable=False,  # nothing is appended after the last layer
    notes=(
        "`if idx == len(self.layers) - 3 or idx == len(self.layers) // 2 or idx == 2: "
        "all_hidden_states += (hidden_states,)` runs before layer idx: boundaries (2, L//2, L-3) "
        "= canonical (1, L//2-1, L-4), ascending. No config field: other layers need a code edit.",
        "EAGLE#239: the embedding counted as a layer.",
    ),
    sources=(
        "SafeAILab/EAGLE eagle/model/modeling_llama_kv.py",
        "SafeAILab/EAGLE eagle/traineagle3/",
        "SafeAILab/EAGLE#239",
    ),
)

ENTRIES = (EAGLE_REFERENCE,)
