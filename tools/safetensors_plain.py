"""safetensors files read with the Python standard library only, for the checks that run
where torch is not installed (CI): 8-byte little-endian header length, JSON header, raw
little-endian data. tools/safetensors_torch.py reads them into torch tensors instead."""
import json
import struct
from array import array

# safetensors dtype -> array typecode (little-endian hosts, as the engine's files assume).
TYPECODES = {"F32": "f", "F64": "d", "I64": "q", "I32": "i"}


def read_safetensors_plain(path):
    """(metadata, {name: (dtype, shape, values)}) of the file at path; values is an
    array.array of the tensor's elements in C order."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        begin, end = (8 + length + offset for offset in entry["data_offsets"])
        values = array(TYPECODES[entry["dtype"]])
        values.frombytes(data[begin:end])
        tensors[name] = (entry["dtype"], entry["shape"], values)
    return metadata, tensors
