"""libconvert: open, convert, quantize and verify model files (safetensors, GGUF, PyTorch
checkpoints) from Python, through the C library the command-line tools are built on.

    import libconvert
    with libconvert.open("model.safetensors") as m:
        w = m.tensor("model.embed_tokens.weight")      # a read-only view of the file
    blocks = libconvert.quantize_array(w, "Q4_K")        # ggml's bytes, exactly
    libconvert.quantize("model-f16.gguf", "model-Q4_K_M.gguf", "Q4_K_M")

Every function calls the library through ctypes, which releases the GIL while the
library works. Failures raise libconvert.Error (a subclass per code) carrying the
library's message, file, entry and byte offset.
"""
from ._dtypes import DType
from ._jobs import convert, pth_to_safetensors, quantize, scan, verify
from ._lib import (ArgumentError, Error, FileError, ForbiddenError, LimitError,
                   MalformedError, MismatchError, NotFoundError, OutOfMemoryError,
                   TruncatedError, UnsupportedError)
from ._meta import Typed
from ._model import Model, TensorInfo, open
from ._quant import (dequantize_array, dequantize_types, imatrix_use, quantize_array,
                     quantize_types)
from ._results import (Global, LogitFigures, QuantizeResult, QuantizeTensor, ScanResult,
                       TensorFigures, VerifyResult)
from ._write import save_gguf, save_safetensors

__version__ = "0.1.0"

__all__ = [
    "open", "Model", "TensorInfo", "DType", "Typed",
    "quantize_array", "dequantize_array", "quantize_types", "dequantize_types", "imatrix_use",
    "save_gguf", "save_safetensors",
    "convert", "quantize", "verify", "pth_to_safetensors", "scan",
    "QuantizeResult", "QuantizeTensor", "VerifyResult", "TensorFigures", "LogitFigures",
    "ScanResult", "Global",
    "Error", "FileError", "OutOfMemoryError", "TruncatedError", "MalformedError",
    "LimitError", "UnsupportedError", "ForbiddenError", "NotFoundError", "MismatchError",
    "ArgumentError",
]
