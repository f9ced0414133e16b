"""Online GRPO with step-level verifiable rewards: advantages, the loss, rollouts, the loop."""
