#!/usr/bin/env python3
"""Writes state_io_reference.safetensors with Hugging Face's writer (pip safetensors, torch).

tests/test_state_io.cpp builds the same tensors in tinyt, checks that safe_save writes the same
bytes and that safe_load reads back the same values. Run from this directory:
    python3 make_state_io_reference.py
"""
import torch
from safetensors.torch import save_file

tensors = {
    "w": (torch.arange(6, dtype=torch.float32) / 4 - 0.5).reshape(2, 3),
    "f64": torch.tensor([1.0 / 3, -2.5e300], dtype=torch.float64),
    "half": torch.tensor([0.5, -1.0, 65504.0], dtype=torch.float16),
    "bf16": torch.tensor([1.5, -2.0, 0.25, 3.0e38], dtype=torch.bfloat16),
    "i64": torch.tensor([-3, 2**40, 7], dtype=torch.int64),
    "i32": torch.tensor([[-1, 2], [2**31 - 1, -(2**31)]], dtype=torch.int32),
    "i16": torch.tensor([-32768, 12345], dtype=torch.int16),
    "i8": torch.tensor([-128, 127, 0], dtype=torch.int8),
    "u64": torch.tensor([2**63 + 5], dtype=torch.uint64),
    "u32": torch.tensor([4000000000, 1], dtype=torch.uint32),
    "u16": torch.tensor([65535, 2], dtype=torch.uint16),
    "u8": torch.tensor([0, 255, 7], dtype=torch.uint8),
    "mask": torch.tensor([True, False, True]),
    "scalar": torch.tensor(2.5, dtype=torch.float64),
    "empty": torch.zeros((2, 0), dtype=torch.int32),
    'we"ird\\name\n\u00e9': torch.tensor([9], dtype=torch.uint8),
}
save_file(tensors, "state_io_reference.safetensors", metadata={"format": "pt"})
