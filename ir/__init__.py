"""fusegrad.ir: the SSA program, its types, the op table, reverse mode, the
reference interpreter, the printer, the verifier and simplifying passes.
Imports nothing from the other layers."""
from .types import (DType, TensorType, bool_, float32, float64, int64, promote_types, result_type,
                    from_numpy_dtype, scalar_dtype, DEFAULT_FLOAT)
from .program import Builder, Instr, Program, Value
from .ops import OPS, OpDef
from .emit import Emitter
from .autodiff import backward, active_values, differentiated_inputs
from .interpreter import reference_apply, run_program
from .printer import format_program
from .verifier import verify, VerifyError, free_values
from .passes import simplify, dead_code_elimination, common_subexpression_elimination
