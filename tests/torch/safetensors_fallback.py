"""A minimal safetensors writer for the PyTorch comparison tests, used only
where PyPI's official `safetensors` package cannot be installed (Debian has
none). It writes the documented format: an 8-byte little-endian header
length, a JSON header of dtype, shape and data offsets, then the raw data."""
import json
import struct

import torch

_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def save_file(tensors, path):
    header, blobs, offset = {}, [], 0
    for name, tensor in tensors.items():
        tensor = tensor.contiguous().cpu()
        # bf16 has no numpy dtype: its bits travel as int16.
        raw = tensor.view(torch.int16).numpy().tobytes() if tensor.dtype == torch.bfloat16 \
            else tensor.numpy().tobytes()
        header[name] = {"dtype": _NAMES[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
