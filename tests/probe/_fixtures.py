"""Tiny inline model-file sources shared by the registry tests (SGLang <= 0.5.17 shapes)."""

BEFORE_LAYER = """
class LlamaModel:
    def forward(self, input_ids, positions):
        hidden_states = self.embed_tokens(input_ids)
        residual = None
        aux_hidden_states = []
        for i in range(self.start_layer, self.end_layer):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            layer = self.layers[i]
            hidden_states, residual = layer(positions, hidden_states, residual)
        return hidden_states, aux_hidden_states
"""
"""A decoder stack capturing ``hidden_states + residual`` before layer ``i`` (line 8)."""

CAUSAL_LM = """
class LlamaForCausalLM:
    def __init__(self, config):
        self.model = LlamaModel(config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        if not self.pp_group.is_last_rank:
            return
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


EntryClass = [LlamaForCausalLM]
"""
"""The entry class: SGLang's "+1 always" setter and its ``EntryClass`` registration."""

# An SGLang model runner that reads the nested ids and hands them to the target's setter.
RUNNER = """
class ModelRunner:
    def init(self, server_args):
        draft_model_config = ModelConfig.from_server_args(server_args, is_draft_model=True)
        try:
            eagle_config = getattr(draft_model_config.hf_config, "eagle_config", None)
            ids = eagle_config["eagle_aux_hidden_state_layer_ids"]
        except:
            ids = None
        self.model.set_eagle3_layers_to_capture(ids)
"""
