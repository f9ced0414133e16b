"""The chat template of the project's own checkpoints: Qwen's ChatML turns, written here.

Each message renders as ``<|im_start|>ROLE\\n CONTENT <|im_end|>\\n``; content is a string or
a list of parts: ``{"type": "text", "text": ...}``, ``{"type": "image"}`` (also an
``image_url`` part, or any part with an ``image`` key) as
``<|vision_start|><|image_pad|><|vision_end|>`` (the processor expands ``<|image_pad|>`` to
the image's tokens), ``{"type": "video"}`` likewise with ``<|video_pad|>``.
``add_generation_prompt`` opens the assistant turn. Assistant content sits in a
``{% generation %}`` block, so ``apply_chat_template(..., return_assistant_tokens_mask=True)``
marks the tokens a trainer learns from. Unlike Qwen's own template it adds no default system
message: the prompt builder sends its own.
"""

from __future__ import annotations

CHAT_TEMPLATE = (
    "{%- macro render(content) -%}"
    "{%- if content is string -%}{{ content }}"
    "{%- else -%}{%- for part in content -%}"
    "{%- if part.type == 'image' or part.type == 'image_url' or 'image' in part -%}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{%- elif part.type == 'video' or 'video' in part -%}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{%- elif 'text' in part -%}{{ part.text }}"
    "{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{%- endmacro -%}"
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message.role + '\n' }}"
    "{%- if message.role == 'assistant' -%}"
    "{% generation %}{{ render(message.content) }}{{ '<|im_end|>' }}{% endgeneration %}{{ '\n' }}"
    "{%- else -%}"
    "{{ render(message.content) }}{{ '<|im_end|>\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}"
)
