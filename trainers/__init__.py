"""Trainers (SFT, DPO, online GRPO) for Qwen2.5-VL-class policies.

Not built yet: the trainers issue adds policy models, data builders, losses, loops and
rollout backends here. The trajectory store's exports (``cua store export``) already
produce the SFT, DPO and GRPO data these trainers will read."""
