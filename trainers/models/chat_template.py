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

Tool calling, in Qwen's format (Qwen2.5 / Qwen3-VL; Qwen2.5-VL's own template has none), so
that TRL's ``GRPOTrainer`` can drive tools with it (docs/adapters.md). It changes nothing when
no ``tools`` are passed and no message has ``tool_calls`` or the ``tool`` role:

- ``tools``: one system turn, the first message's system text (if any) then the tool
  signatures as JSON lines in ``<tools></tools>`` and how to call them;
- an assistant message's ``tool_calls``: ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``
  after its content, inside the generation block;
- ``tool`` messages: a user turn of ``<tool_response>`` blocks (consecutive ones share it),
  images included.

``RESPONSE_TEMPLATE`` is transformers' parser of such an assistant turn (the tokenizer's
``response_template``, saved with the checkpoint), so ``tokenizer.parse_response`` finds the
tool calls in generated text.
"""

from __future__ import annotations

from typing import Any

TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_CALL_FORMAT = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)

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
    "{%- macro render_calls(message) -%}"
    "{%- for call in message.tool_calls -%}"
    "{%- if (loop.first and message.content) or not loop.first -%}{{ '\n' }}{%- endif -%}"
    "{%- set fn = call.function if call.function is defined else call -%}"
    "{{ '<tool_call>\n{\"name\": \"' + fn.name + '\", \"arguments\": ' }}"
    "{%- if fn.arguments is string -%}{{ fn.arguments }}{%- else -%}{{ fn.arguments | tojson }}{%- endif -%}"
    "{{ '}\n</tool_call>' }}"
    "{%- endfor -%}"
    "{%- endmacro -%}"
    "{%- if tools -%}"
    "{{ '<|im_start|>system\n' }}"
    "{%- if messages[0].role == 'system' -%}{{ render(messages[0].content) }}{{ '\n\n' }}{%- endif -%}"
    "{{ '" + TOOLS_PREAMBLE.replace("\n", "\\n") + "' }}"
    "{%- for tool in tools -%}{{ '\n' }}{{ tool | tojson }}{%- endfor -%}"
    "{{ '" + TOOLS_CALL_FORMAT.replace("\n", "\\n").replace('"', '\\"') + "<|im_end|>\n' }}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if tools and loop.first and message.role == 'system' -%}"
    "{%- elif message.role == 'tool' -%}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{ '<|im_start|>user' }}{%- endif -%}"
    "{{ '\n<tool_response>\n' }}{{ render(message.content) }}{{ '\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{ '<|im_end|>\n' }}{%- endif -%}"
    "{%- else -%}"
    "{{ '<|im_start|>' + message.role + '\n' }}"
    "{%- if message.role == 'assistant' -%}"
    "{% generation %}{{ render(message.content) }}"
    "{%- if message.tool_calls -%}{{ render_calls(message) }}{%- endif -%}"
    "{{ '<|im_end|>' }}{% endgeneration %}{{ '\n' }}"
    "{%- else -%}"
    "{{ render(message.content) }}{{ '<|im_end|>\n' }}"
    "{%- endif -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}"
)

#: transformers' response template (``tokenizer.response_template``) for an assistant turn of
#: CHAT_TEMPLATE: text, then ``<tool_call>`` JSON blocks, then ``<|im_end|>``. The same fields
#: as TRL's parser of Qwen3's turns, less the thinking block.
RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}
