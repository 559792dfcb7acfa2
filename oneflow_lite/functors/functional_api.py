"""The functional API: every public function's signatures, in OneFlow's
``functional_api.yaml`` form. ``oneflow_lite.functional`` is generated from this
table; each signature's ``=> Name`` is a functor registered in ``functors/``.
Overloads are tried in the order listed; the first that binds wins.
"""

FUNCTIONAL_API: dict[str, list[str]] = {
    # ---- activations
    "relu": ["Tensor (Tensor input, Bool inplace=False) => Relu"],
    # ---- elementwise arithmetic (broadcasting, PyTorch type promotion)
    "add": [
        "Tensor (Tensor input, Tensor other, *, Scalar alpha=1, Bool inplace=False) => Add",
        "Tensor (Tensor input, Scalar other, *, Scalar alpha=1, Bool inplace=False) => ScalarAdd",
        "Tensor (Scalar input, Tensor other, *, Scalar alpha=1) => ScalarAddLeft",
    ],
    "sub": [
        "Tensor (Tensor input, Tensor other, *, Scalar alpha=1, Bool inplace=False) => Sub",
        "Tensor (Tensor input, Scalar other, *, Scalar alpha=1, Bool inplace=False) => ScalarSub",
        "Tensor (Scalar input, Tensor other, *, Scalar alpha=1) => ScalarSubLeft",
    ],
    "mul": [
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Mul",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarMul",
        "Tensor (Scalar input, Tensor other) => ScalarMulLeft",
    ],
    "div": [
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Div",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarDiv",
        "Tensor (Scalar input, Tensor other) => ScalarDivLeft",
    ],
    "neg": ["Tensor (Tensor input) => Neg"],
    "exp": ["Tensor (Tensor input) => Exp"],
    # ---- comparisons (bool results)
    "eq": ["Tensor (Tensor input, Tensor other) => Equal", "Tensor (Tensor input, Scalar other) => ScalarEqual"],
    "ne": ["Tensor (Tensor input, Tensor other) => NotEqual",
           "Tensor (Tensor input, Scalar other) => ScalarNotEqual"],
    "lt": ["Tensor (Tensor input, Tensor other) => Less", "Tensor (Tensor input, Scalar other) => ScalarLess"],
    "le": ["Tensor (Tensor input, Tensor other) => LessEqual",
           "Tensor (Tensor input, Scalar other) => ScalarLessEqual"],
    "gt": ["Tensor (Tensor input, Tensor other) => Greater",
           "Tensor (Tensor input, Scalar other) => ScalarGreater"],
    "ge": ["Tensor (Tensor input, Tensor other) => GreaterEqual",
           "Tensor (Tensor input, Scalar other) => ScalarGreaterEqual"],
    # ---- linear algebra and reductions
    "matmul": ["Tensor (Tensor input, Tensor other) => MatMul"],
    "sum": ["Tensor (Tensor input, IntList dim=None, Bool keepdim=False, *, DataType dtype=None) => ReduceSum"],
    # ---- shape
    "reshape": ["Tensor (Tensor input, Shape shape) => Reshape"],
    "transpose": ["Tensor (Tensor input, Int dim0, Int dim1) => Transpose"],
    # ---- conversion
    "cast": ["Tensor (Tensor input, DataType dtype) => Cast"],
    # ---- creation (a Shape also takes varargs ints: zeros(2, 3) is zeros((2, 3)))
    "zeros": [("Tensor (Shape size, *, DataType dtype=None, Device device=None, Bool requires_grad=False) "
               "=> Zeros")],
    "ones": ["Tensor (Shape size, *, DataType dtype=None, Device device=None, Bool requires_grad=False) => Ones"],
    "full": [("Tensor (Shape size, Scalar fill_value, *, DataType dtype=None, Device device=None, "
              "Bool requires_grad=False) => Full")],
    "arange": [
        "Tensor (Scalar end, *, DataType dtype=None, Device device=None, Bool requires_grad=False) => ArangeEnd",
        ("Tensor (Scalar start, Scalar end, Scalar step=1, *, DataType dtype=None, Device device=None, "
         "Bool requires_grad=False) => Arange"),
    ],
    "rand": [("Tensor (Shape size, *, Generator generator=None, DataType dtype=None, Device device=None, "
              "Bool requires_grad=False) => Rand")],
    "randn": [("Tensor (Shape size, *, Generator generator=None, DataType dtype=None, Device device=None, "
               "Bool requires_grad=False) => Randn")],
}
