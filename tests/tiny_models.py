"""Tiny random-weight models for the tests: the builders live in ``vidaudit.tools.mech.tiny`` (also behind
``vidaudit tiny-model FAMILY --out DIR``); the names the tests import stay here."""

from vidaudit.tools.mech.tiny import (  # noqa: F401
    LLAVA_CHAT_TEMPLATE,
    LLAVA_SPECIALS,
    QWEN_CHAT_TEMPLATE,
    QWEN_SPECIALS,
    SMOLVLM_CHAT_TEMPLATE,
    SMOLVLM_SPECIALS,
    build_llava_onevision,
    build_qwen2_5_vl,
    build_qwen2_vl,
    build_qwen3_vl,
    build_smolvlm,
    train_tokenizer,
)
