"""Engine integrations: plugins and launchers that dump and guard what a live serving engine
feeds an EAGLE-3 drafter (``vllm``, ``sglang``)."""
