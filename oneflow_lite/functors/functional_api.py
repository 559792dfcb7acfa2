"""The functional API: every public function's signatures, in OneFlow's
``functional_api.yaml`` form. ``oneflow_lite.functional`` is generated from this
table; each signature's ``=> Name`` is a functor registered in ``functors/``.
Overloads are tried in the order listed; the first that binds wins.

An entry made with ``method(...)`` is also a Tensor method (PyTorch's ``variants:
function, method``): ``x.<name>(...)`` calls the function with ``x`` first;
``inplace=True`` adds ``x.<name>_(...)``, the call with ``inplace=True``; ``also``
names more methods of the same call (``__abs__``).
"""


class Entry(list):
    """The signatures of a function that is also a Tensor method (see the module docstring)."""

    def __init__(self, signatures, inplace=False, also=()):
        super().__init__(signatures)
        self.inplace = inplace
        self.also = also


def method(*signatures: str, inplace: bool = False, also: tuple = ()) -> Entry:
    """A functional entry that is also a Tensor method (and ``<name>_`` when ``inplace``)."""
    return Entry(signatures, inplace, also)


FUNCTIONAL_API: dict[str, list[str]] = {
    # ---- activations
    "relu": method("Tensor (Tensor input, Bool inplace=False) => Relu", inplace=True),
    "relu6": ["Tensor (Tensor input, Bool inplace=False) => Relu6"],
    "leaky_relu": ["Tensor (Tensor input, Float negative_slope=0.01, Bool inplace=False) => LeakyRelu"],
    "elu": ["Tensor (Tensor input, Float alpha=1.0, Bool inplace=False) => Elu"],
    "selu": ["Tensor (Tensor input, Bool inplace=False) => Selu"],
    "gelu": ["Tensor (Tensor input, *, String approximate='none') => Gelu"],
    "silu": ["Tensor (Tensor input, Bool inplace=False) => Silu"],
    "mish": ["Tensor (Tensor input, Bool inplace=False) => Mish"],
    "softplus": ["Tensor (Tensor input, Float beta=1.0, Float threshold=20.0) => Softplus"],
    "hardtanh": ["Tensor (Tensor input, Float min_val=-1.0, Float max_val=1.0, Bool inplace=False) => Hardtanh"],
    "hardsigmoid": ["Tensor (Tensor input, Bool inplace=False) => Hardsigmoid"],
    "hardswish": ["Tensor (Tensor input, Bool inplace=False) => Hardswish"],
    "sigmoid": method("Tensor (Tensor input, *, Bool inplace=False) => Sigmoid", inplace=True),
    "tanh": method("Tensor (Tensor input, *, Bool inplace=False) => Tanh", inplace=True),
    # ---- elementwise unary math (functors/unary.py; inplace=True is the Tensor's ``<name>_``)
    "abs": method("Tensor (Tensor input, *, Bool inplace=False) => Abs", inplace=True, also=("__abs__",)),
    "expm1": method("Tensor (Tensor input, *, Bool inplace=False) => Expm1", inplace=True),
    "log": method("Tensor (Tensor input, *, Bool inplace=False) => Log", inplace=True),
    "log1p": method("Tensor (Tensor input, *, Bool inplace=False) => Log1p", inplace=True),
    "log2": method("Tensor (Tensor input, *, Bool inplace=False) => Log2", inplace=True),
    "sqrt": method("Tensor (Tensor input, *, Bool inplace=False) => Sqrt", inplace=True),
    "rsqrt": method("Tensor (Tensor input, *, Bool inplace=False) => Rsqrt", inplace=True),
    "square": method("Tensor (Tensor input, *, Bool inplace=False) => Square", inplace=True),
    "sin": method("Tensor (Tensor input, *, Bool inplace=False) => Sin", inplace=True),
    "cos": method("Tensor (Tensor input, *, Bool inplace=False) => Cos", inplace=True),
    "tan": method("Tensor (Tensor input, *, Bool inplace=False) => Tan", inplace=True),
    "sign": method("Tensor (Tensor input, *, Bool inplace=False) => Sign", inplace=True),
    "floor": method("Tensor (Tensor input, *, Bool inplace=False) => Floor", inplace=True),
    "ceil": method("Tensor (Tensor input, *, Bool inplace=False) => Ceil", inplace=True),
    "round": method("Tensor (Tensor input, *, Int decimals=0, Bool inplace=False) => Round", inplace=True),
    "trunc": method("Tensor (Tensor input, *, Bool inplace=False) => Trunc", inplace=True),
    "reciprocal": method("Tensor (Tensor input, *, Bool inplace=False) => Reciprocal", inplace=True),
    "erf": method("Tensor (Tensor input, *, Bool inplace=False) => Erf", inplace=True),
    "logical_not": method("Tensor (Tensor input, *, Bool inplace=False) => LogicalNot", inplace=True),
    "isnan": method("Tensor (Tensor input) => IsNan"),
    "isinf": method("Tensor (Tensor input) => IsInf"),
    "isfinite": method("Tensor (Tensor input) => IsFinite"),
    "nan_to_num": method(("Tensor (Tensor input, Float nan=0.0, Float posinf=None, Float neginf=None, *, "
                    "Bool inplace=False) => NanToNum"), inplace=True),
    "clamp": method("Tensor (Tensor input, Scalar min=None, Scalar max=None, *, Bool inplace=False) => Clamp",
              "Tensor (Tensor input, Tensor min=None, Tensor max=None, *, Bool inplace=False) => ClampTensor", inplace=True),
    "clip": method("Tensor (Tensor input, Scalar min=None, Scalar max=None, *, Bool inplace=False) => Clamp",
             "Tensor (Tensor input, Tensor min=None, Tensor max=None, *, Bool inplace=False) => ClampTensor", inplace=True),
    # ---- [compat s1] more elementwise math: inverse trigonometric and hyperbolic functions, special
    # functions, aliases (functors/unary.py, functors/binary.py; ops/binary.py)
    "acos": method("Tensor (Tensor input, *, Bool inplace=False) => Acos", inplace=True),
    "arccos": method("Tensor (Tensor input, *, Bool inplace=False) => Arccos", inplace=True),
    "asin": method("Tensor (Tensor input, *, Bool inplace=False) => Asin", inplace=True),
    "arcsin": method("Tensor (Tensor input, *, Bool inplace=False) => Arcsin", inplace=True),
    "atan": method("Tensor (Tensor input, *, Bool inplace=False) => Atan", inplace=True),
    "arctan": method("Tensor (Tensor input, *, Bool inplace=False) => Arctan", inplace=True),
    "acosh": method("Tensor (Tensor input, *, Bool inplace=False) => Acosh", inplace=True),
    "arccosh": method("Tensor (Tensor input, *, Bool inplace=False) => Arccosh", inplace=True),
    "asinh": method("Tensor (Tensor input, *, Bool inplace=False) => Asinh", inplace=True),
    "arcsinh": method("Tensor (Tensor input, *, Bool inplace=False) => Arcsinh", inplace=True),
    "atanh": method("Tensor (Tensor input, *, Bool inplace=False) => Atanh", inplace=True),
    "arctanh": method("Tensor (Tensor input, *, Bool inplace=False) => Arctanh", inplace=True),
    "sinh": method("Tensor (Tensor input, *, Bool inplace=False) => Sinh", inplace=True),
    "cosh": method("Tensor (Tensor input, *, Bool inplace=False) => Cosh", inplace=True),
    "erfc": method("Tensor (Tensor input, *, Bool inplace=False) => Erfc", inplace=True),
    "erfinv": method("Tensor (Tensor input, *, Bool inplace=False) => Erfinv", inplace=True),
    "exp2": method("Tensor (Tensor input, *, Bool inplace=False) => Exp2", inplace=True),
    "log10": method("Tensor (Tensor input, *, Bool inplace=False) => Log10", inplace=True),
    "lgamma": method("Tensor (Tensor input, *, Bool inplace=False) => Lgamma", inplace=True),
    "digamma": method("Tensor (Tensor input, *, Bool inplace=False) => Digamma", inplace=True),
    "i0": method("Tensor (Tensor input, *, Bool inplace=False) => I0", inplace=True),
    "sinc": method("Tensor (Tensor input, *, Bool inplace=False) => Sinc", inplace=True),
    "frac": method("Tensor (Tensor input, *, Bool inplace=False) => Frac", inplace=True),
    "fix": method("Tensor (Tensor input, *, Bool inplace=False) => Fix", inplace=True),
    "sgn": method("Tensor (Tensor input, *, Bool inplace=False) => Sgn", inplace=True),
    "absolute": method("Tensor (Tensor input, *, Bool inplace=False) => Absolute", inplace=True),
    "negative": method("Tensor (Tensor input, *, Bool inplace=False) => Negative", inplace=True),
    "deg2rad": method("Tensor (Tensor input, *, Bool inplace=False) => Deg2rad", inplace=True),
    "rad2deg": method("Tensor (Tensor input, *, Bool inplace=False) => Rad2deg", inplace=True),
    "positive": method("Tensor (Tensor input) => Positive", also=("__pos__",)),
    "signbit": method("Tensor (Tensor input) => Signbit"),
    "isposinf": method("Tensor (Tensor input) => IsPosInf"),
    "isneginf": method("Tensor (Tensor input) => IsNegInf"),
    "isreal": method("Tensor (Tensor input) => IsReal"),
    "angle": method("Tensor (Tensor input) => Angle"),
    "frexp": method("TensorTuple (Tensor input) => Frexp"),
    "logit": method("Tensor (Tensor input, Float eps=None, *, Bool inplace=False) => Logit", inplace=True),
    "polygamma": ["Tensor (Int n, Tensor input, *, Bool inplace=False) => Polygamma"],  # method: tensor_methods.py
    "mvlgamma": method("Tensor (Tensor input, Int p, *, Bool inplace=False) => Mvlgamma", inplace=True),
    "clamp_min": method("Tensor (Tensor input, Scalar min, *, Bool inplace=False) => ClampMin",
                        "Tensor (Tensor input, Tensor min, *, Bool inplace=False) => ClampMin", inplace=True),
    "clamp_max": method("Tensor (Tensor input, Scalar max, *, Bool inplace=False) => ClampMax",
                        "Tensor (Tensor input, Tensor max, *, Bool inplace=False) => ClampMax", inplace=True),
    "hypot": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Hypot", inplace=True),
    "logaddexp": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Logaddexp"),
    "logaddexp2": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Logaddexp2"),
    "fmax": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Fmax"),
    "fmin": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Fmin"),
    "nextafter": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Nextafter", inplace=True),
    "igamma": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Igamma", inplace=True),
    "igammac": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Igammac", inplace=True),
    "gcd": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Gcd", inplace=True),
    "lcm": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Lcm", inplace=True),
    "ldexp": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Ldexp", inplace=True),
    "heaviside": method("Tensor (Tensor input, Tensor values, *, Bool inplace=False) => Heaviside", inplace=True),
    "copysign": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Copysign",
                       "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarCopysign", inplace=True),
    "xlogy": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Xlogy",
                    "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarXlogy",
                    "Tensor (Scalar input, Tensor other) => ScalarXlogyLeft", inplace=True),
    "bitwise_left_shift": method(
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False) => BitwiseLeftShift",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarBitwiseLeftShift",
        "Tensor (Scalar input, Tensor other) => ScalarBitwiseLeftShiftLeft", inplace=True),
    "bitwise_right_shift": method(
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False) => BitwiseRightShift",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarBitwiseRightShift",
        "Tensor (Scalar input, Tensor other) => ScalarBitwiseRightShiftLeft", inplace=True),
    "float_power": method("Tensor (Tensor input, Tensor exponent, *, Bool inplace=False) => FloatPower",
                          "Tensor (Tensor input, Scalar exponent, *, Bool inplace=False) => ScalarFloatPower",
                          "Tensor (Scalar input, Tensor exponent) => ScalarFloatPowerLeft", inplace=True),
    "rsub": ["Tensor (Tensor input, Tensor other, *, Scalar alpha=1) => Rsub",
             "Tensor (Tensor input, Scalar other, Scalar alpha=1) => Rsub"],
    # aliases of the arithmetic and comparison functions (their functors; in place as x.<name>_)
    "true_divide": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => TrueDivide",
                          "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarTrueDivide",
                          inplace=True),
    "divide": method(
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False, String rounding_mode=None) => Divide",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False, String rounding_mode=None) => ScalarDivide",
        "Tensor (Scalar input, Tensor other, *, String rounding_mode=None) => ScalarDivideLeft", inplace=True),
    "multiply": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Multiply",
                       "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarMultiply",
                       "Tensor (Scalar input, Tensor other) => ScalarMulLeft", inplace=True),
    "subtract": method(
        "Tensor (Tensor input, Tensor other, *, Scalar alpha=1, Bool inplace=False) => Subtract",
        "Tensor (Tensor input, Scalar other, *, Scalar alpha=1, Bool inplace=False) => ScalarSubtract",
        "Tensor (Scalar input, Tensor other, *, Scalar alpha=1) => ScalarSubtractLeft", inplace=True),
    "greater": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => GreaterAlias",
                      "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarGreaterAlias", inplace=True),
    "greater_equal": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => GreaterEqualAlias",
                            "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarGreaterEqualAlias",
                            inplace=True),
    "less": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => LessAlias",
                   "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarLessAlias", inplace=True),
    "less_equal": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => LessEqualAlias",
                         "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarLessEqualAlias",
                         inplace=True),
    "not_equal": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => NotEqualAlias",
                        "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarNotEqualAlias",
                        inplace=True),
    # torch.<name>_(input, ...): the function with inplace=True (functors/unary.py INPLACE_FUNCTIONS)
    **{name + "_": ["Tensor (Tensor input) => " + "".join(p[:1].upper() + p[1:] for p in name.split("_")) + "Inplace"]
       for name in (
        "abs", "absolute", "acos", "arccos", "acosh", "arccosh", "asin", "arcsin", "asinh", "arcsinh", "atan",
        "arctan", "atanh", "arctanh", "ceil", "cos", "cosh", "deg2rad", "erf", "erfc", "exp", "exp2", "expm1", "fix",
        "floor", "frac", "i0", "log", "log10", "log1p", "log2", "neg", "negative", "rad2deg", "reciprocal", "rsqrt",
        "sigmoid", "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh", "trunc",)},
    "round_": ["Tensor (Tensor input, *, Int decimals=0) => RoundInplace"],
    "logit_": ["Tensor (Tensor input, Float eps=None) => LogitInplace"],
    "nan_to_num_": [
        "Tensor (Tensor input, Float nan=0.0, Float posinf=None, Float neginf=None) => NanToNumInplace"],
    "clamp_": ["Tensor (Tensor input, Scalar min=None, Scalar max=None) => ClampInplace",
               "Tensor (Tensor input, Tensor min=None, Tensor max=None) => ClampInplace"],
    "clip_": ["Tensor (Tensor input, Scalar min=None, Scalar max=None) => ClipInplace",
              "Tensor (Tensor input, Tensor min=None, Tensor max=None) => ClipInplace"],
    "clamp_min_": ["Tensor (Tensor input, Scalar min) => ClampMinInplace",
                   "Tensor (Tensor input, Tensor min) => ClampMinInplace"],
    "clamp_max_": ["Tensor (Tensor input, Scalar max) => ClampMaxInplace",
                   "Tensor (Tensor input, Tensor max) => ClampMaxInplace"],
    "gcd_": ["Tensor (Tensor input, Tensor other) => GcdInplace"],
    "lcm_": ["Tensor (Tensor input, Tensor other) => LcmInplace"],
    "ldexp_": ["Tensor (Tensor input, Tensor other) => LdexpInplace"],
    "xlogy_": ["Tensor (Tensor input, Tensor other) => XlogyInplace",
               "Tensor (Tensor input, Scalar other) => XlogyInplace"],
    # ---- end [compat s1]
    # ---- elementwise arithmetic (broadcasting, PyTorch type promotion)
    "add": method(
        "Tensor (Tensor input, Tensor other, *, Scalar alpha=1, Bool inplace=False) => Add",
        "Tensor (Tensor input, Scalar other, *, Scalar alpha=1, Bool inplace=False) => ScalarAdd",
        "Tensor (Scalar input, Tensor other, *, Scalar alpha=1) => ScalarAddLeft", inplace=True),
    "sub": method(
        "Tensor (Tensor input, Tensor other, *, Scalar alpha=1, Bool inplace=False) => Sub",
        "Tensor (Tensor input, Scalar other, *, Scalar alpha=1, Bool inplace=False) => ScalarSub",
        "Tensor (Scalar input, Tensor other, *, Scalar alpha=1) => ScalarSubLeft", inplace=True),
    "mul": method(
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Mul",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarMul",
        "Tensor (Scalar input, Tensor other) => ScalarMulLeft", inplace=True),
    "div": method(  # rounding_mode after inplace: the functors take the arguments in this order
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False, String rounding_mode=None) => Div",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False, String rounding_mode=None) => ScalarDiv",
        "Tensor (Scalar input, Tensor other, *, String rounding_mode=None) => ScalarDivLeft", inplace=True),
    "neg": method("Tensor (Tensor input, *, Bool inplace=False) => Neg", inplace=True, also=("__neg__",)),
    "exp": method("Tensor (Tensor input, *, Bool inplace=False) => Exp", inplace=True),
    # ---- comparisons (bool results; in place: cast to the input's dtype)
    "eq": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Equal",
           "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarEqual", inplace=True),
    "ne": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => NotEqual",
           "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarNotEqual", inplace=True),
    "lt": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Less",
           "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarLess", inplace=True),
    "le": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => LessEqual",
           "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarLessEqual", inplace=True),
    "gt": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Greater",
           "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarGreater", inplace=True),
    "ge": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => GreaterEqual",
           "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarGreaterEqual", inplace=True),
    # ---- more elementwise binary and ternary ops (functors/binary.py)
    "floor_divide": method(
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False) => FloorDivide",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarFloorDivide",
        "Tensor (Scalar input, Tensor other) => ScalarFloorDivideLeft", inplace=True),
    "pow": method(
        "Tensor (Tensor input, Tensor exponent, *, Bool inplace=False) => Pow",
        "Tensor (Tensor input, Scalar exponent, *, Bool inplace=False) => ScalarPow",
        "Tensor (Scalar input, Tensor exponent) => ScalarReversePow", inplace=True),
    "maximum": method("Tensor (Tensor input, Tensor other) => Maximum"),
    "minimum": method("Tensor (Tensor input, Tensor other) => Minimum"),
    "fmod": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Fmod",
             "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarFmod", inplace=True),
    "remainder": method(
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Remainder",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarRemainder",
        "Tensor (Scalar input, Tensor other) => ScalarRemainderLeft", inplace=True),
    "atan2": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Atan2", inplace=True),
    "arctan2": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => Atan2", inplace=True),
    "logical_and": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => LogicalAnd", inplace=True),
    "logical_or": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => LogicalOr", inplace=True),
    "logical_xor": method("Tensor (Tensor input, Tensor other, *, Bool inplace=False) => LogicalXor", inplace=True),
    "bitwise_and": method(
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False) => BitwiseAnd",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarBitwiseAnd",
        "Tensor (Scalar input, Tensor other) => ScalarBitwiseAndLeft", inplace=True),
    "bitwise_or": method(
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False) => BitwiseOr",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarBitwiseOr",
        "Tensor (Scalar input, Tensor other) => ScalarBitwiseOrLeft", inplace=True),
    "bitwise_xor": method(
        "Tensor (Tensor input, Tensor other, *, Bool inplace=False) => BitwiseXor",
        "Tensor (Tensor input, Scalar other, *, Bool inplace=False) => ScalarBitwiseXor",
        "Tensor (Scalar input, Tensor other) => ScalarBitwiseXorLeft", inplace=True),
    "bitwise_not": method("Tensor (Tensor input, *, Bool inplace=False) => BitwiseNot", inplace=True,
                          also=("__invert__",)),
    "where": [
        "Tensor (Tensor condition, Tensor input, Tensor other) => Where",
        "Tensor (Tensor condition, Scalar input, Tensor other) => WhereScalarX",
        "Tensor (Tensor condition, Tensor input, Scalar other) => WhereScalarY",
        "Tensor (Tensor condition, Scalar input, Scalar other) => WhereScalarXY",
        "TensorTuple (Tensor condition) => WhereNonzero",
    ],
    "lerp": method(
        "Tensor (Tensor input, Tensor end, Tensor weight, *, Bool inplace=False) => Lerp",
        "Tensor (Tensor input, Tensor end, Scalar weight, *, Bool inplace=False) => ScalarLerp", inplace=True),
    "addcmul": method(("Tensor (Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1, Bool inplace=False) "
                 "=> Addcmul"), inplace=True),
    "addcdiv": method(("Tensor (Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1, Bool inplace=False) "
                 "=> Addcdiv"), inplace=True),
    # ---- linear algebra and reductions
    "matmul": method("Tensor (Tensor input, Tensor other) => MatMul"),
    "sum": method("Tensor (Tensor input, IntList dim=None, Bool keepdim=False, *, DataType dtype=None) => ReduceSum"),
    # ---- reductions, scans and sorting (functors/reduce.py)
    "mean": method("Tensor (Tensor input, IntList dim=None, Bool keepdim=False, *, DataType dtype=None) => ReduceMean"),
    "prod": method("Tensor (Tensor input, Int dim=None, Bool keepdim=False, *, DataType dtype=None) => ReduceProd"),
    "max": method(
        "Tensor (Tensor input) => Max",
        "TensorTuple (Tensor input, Int dim, Bool keepdim=False) => MaxDim",
        "Tensor (Tensor input, Tensor other) => Maximum"),
    "min": method(
        "Tensor (Tensor input) => Min",
        "TensorTuple (Tensor input, Int dim, Bool keepdim=False) => MinDim",
        "Tensor (Tensor input, Tensor other) => Minimum"),
    "amax": method("Tensor (Tensor input, IntList dim=[], Bool keepdim=False) => Amax"),
    "amin": method("Tensor (Tensor input, IntList dim=[], Bool keepdim=False) => Amin"),
    "argmax": method("Tensor (Tensor input, Int dim=None, Bool keepdim=False) => ArgMax"),
    "argmin": method("Tensor (Tensor input, Int dim=None, Bool keepdim=False) => ArgMin"),
    "var": method(
        ("Tensor (Tensor input, IntList dim=None, Bool unbiased=None, Bool keepdim=False, *, Scalar correction=None) "
         "=> Var"),
        "Tensor (Tensor input, Bool unbiased) => VarUnbiased"),
    "std": method(
        ("Tensor (Tensor input, IntList dim=None, Bool unbiased=None, Bool keepdim=False, *, Scalar correction=None) "
         "=> Std"),
        "Tensor (Tensor input, Bool unbiased) => StdUnbiased"),
    "logsumexp": method("Tensor (Tensor input, IntList dim, Bool keepdim=False) => LogSumExp"),
    "norm": method(
        "Tensor (Tensor input, Scalar p=None, IntList dim=None, Bool keepdim=False, *, DataType dtype=None) => Norm",
        "Tensor (Tensor input, String p, IntList dim=None, Bool keepdim=False, *, DataType dtype=None) => Norm"),
    "all": method("Tensor (Tensor input, IntList dim=None, Bool keepdim=False) => ReduceAll"),
    "any": method("Tensor (Tensor input, IntList dim=None, Bool keepdim=False) => ReduceAny"),
    "hash_tensor": method("Tensor (Tensor input, IntList dim=None, Bool keepdim=False, *, Int mode=0) => HashTensor"),
    "cumsum": method("Tensor (Tensor input, Int dim, *, DataType dtype=None, Bool inplace=False) => Cumsum",
                     inplace=True),
    "cumprod": method("Tensor (Tensor input, Int dim, *, DataType dtype=None, Bool inplace=False) => Cumprod",
                      inplace=True),
    "sort": method("TensorTuple (Tensor input, Int dim=-1, Bool descending=False, *, Bool stable=False) => Sort"),
    "argsort": method("Tensor (Tensor input, Int dim=-1, Bool descending=False, *, Bool stable=False) => ArgSort"),
    "topk": method("TensorTuple (Tensor input, Int k, Int dim=-1, Bool largest=True, Bool sorted=True) => TopK"),
    # ---- statistics, searching, linear algebra and torch.linalg (functors/reduce.py, functors/linalg.py;
    # the linalg_<name> entries are flow.linalg.<name>, oneflow_lite/linalg.py)
    "aminmax": method("TensorTuple (Tensor input, *, Int dim=None, Bool keepdim=False) => Aminmax"),
    "median": method("Tensor (Tensor input) => Median",
                     "TensorTuple (Tensor input, Int dim, Bool keepdim=False) => MedianDim"),
    "nanmedian": method("Tensor (Tensor input) => NanMedian",
                        "TensorTuple (Tensor input, Int dim, Bool keepdim=False) => NanMedianDim"),
    "mode": method("TensorTuple (Tensor input, Int dim=-1, Bool keepdim=False) => Mode"),
    "kthvalue": method("TensorTuple (Tensor input, Int k, Int dim=-1, Bool keepdim=False) => Kthvalue"),
    "quantile": method(
        "Tensor (Tensor input, Tensor q, Int dim=None, Bool keepdim=False, *, String interpolation='linear') => Quantile",
        "Tensor (Tensor input, Float q, Int dim=None, Bool keepdim=False, *, String interpolation='linear') => Quantile"),
    "nanquantile": method(
        ("Tensor (Tensor input, Tensor q, Int dim=None, Bool keepdim=False, *, String interpolation='linear') "
         "=> NanQuantile"),
        ("Tensor (Tensor input, Float q, Int dim=None, Bool keepdim=False, *, String interpolation='linear') "
         "=> NanQuantile")),
    "nansum": method("Tensor (Tensor input, IntList dim=None, Bool keepdim=False, *, DataType dtype=None) => Nansum"),
    "nanmean": method("Tensor (Tensor input, IntList dim=None, Bool keepdim=False, *, DataType dtype=None) => Nanmean"),
    "std_mean": [("TensorTuple (Tensor input, IntList dim=None, Bool unbiased=None, Bool keepdim=False, *, "
                  "Scalar correction=None) => StdMean"), "TensorTuple (Tensor input, Bool unbiased) => StdMeanUnbiased"],
    "var_mean": [("TensorTuple (Tensor input, IntList dim=None, Bool unbiased=None, Bool keepdim=False, *, "
                  "Scalar correction=None) => VarMean"), "TensorTuple (Tensor input, Bool unbiased) => VarMeanUnbiased"],
    "logcumsumexp": method("Tensor (Tensor input, Int dim) => Logcumsumexp"),
    "cummax": method("TensorTuple (Tensor input, Int dim) => Cummax"),
    "cummin": method("TensorTuple (Tensor input, Int dim) => Cummin"),
    "msort": method("Tensor (Tensor input) => Msort"),
    "argwhere": method("Tensor (Tensor input) => Argwhere"),
    "histc": method("Tensor (Tensor input, Int bins=100, Scalar min=0, Scalar max=0) => Histc"),
    "histogram": method(("TensorTuple (Tensor input, Int bins=100, *, FloatList range=None, Tensor weight=None, "
                         "Bool density=False) => Histogram"),
                        ("TensorTuple (Tensor input, Tensor bins, *, FloatList range=None, Tensor weight=None, "
                         "Bool density=False) => Histogram")),
    "bincount": method("Tensor (Tensor input, Tensor weights=None, Int minlength=0) => Bincount"),
    "searchsorted": [
        ("Tensor (Tensor sorted_sequence, Tensor values, *, Bool out_int32=False, Bool right=False, "
         "String side=None, Tensor sorter=None) => Searchsorted"),
        ("Tensor (Tensor sorted_sequence, Scalar values, *, Bool out_int32=False, Bool right=False, "
         "String side=None, Tensor sorter=None) => Searchsorted")],
    "bucketize": ["Tensor (Tensor input, Tensor boundaries, *, Bool out_int32=False, Bool right=False) => Bucketize",
                  "Tensor (Scalar input, Tensor boundaries, *, Bool out_int32=False, Bool right=False) => Bucketize"],
    "unique": method("TensorTuple (Tensor input, Bool sorted=True, Bool return_inverse=False, "
                     "Bool return_counts=False, Int dim=None) => Unique"),
    "unique_consecutive": method("TensorTuple (Tensor input, Bool return_inverse=False, Bool return_counts=False, "
                                 "Int dim=None) => UniqueConsecutive"),
    "trapezoid": ["Tensor (Tensor y, Tensor x, *, Int dim=-1) => Trapezoid",
                  "Tensor (Tensor y, *, Scalar dx=None, Int dim=-1) => TrapezoidDx"],
    "trapz": ["Tensor (Tensor y, Tensor x, *, Int dim=-1) => Trapezoid",
              "Tensor (Tensor y, *, Scalar dx=1, Int dim=-1) => TrapzDx"],
    "cumulative_trapezoid": ["Tensor (Tensor y, Tensor x, *, Int dim=-1) => CumulativeTrapezoid",
                             "Tensor (Tensor y, *, Scalar dx=None, Int dim=-1) => CumulativeTrapezoidDx"],
    "isclose": method("Tensor (Tensor input, Tensor other, Float rtol=1e-05, Float atol=1e-08, Bool equal_nan=False) "
                      "=> Isclose"),
    "allclose": method("Bool (Tensor input, Tensor other, Float rtol=1e-05, Float atol=1e-08, Bool equal_nan=False) "
                       "=> Allclose"),
    "equal": method("Bool (Tensor input, Tensor other) => TensorEqual"),
    "dist": method("Tensor (Tensor input, Tensor other, Scalar p=2) => Dist"),
    "renorm": method("Tensor (Tensor input, Scalar p, Int dim, Scalar maxnorm, *, Bool inplace=False) => Renorm",
                     inplace=True),
    "frobenius_norm": ["Tensor (Tensor input, IntList dim=None, Bool keepdim=False) => FrobeniusNorm"],
    "nuclear_norm": ["Tensor (Tensor input, Bool keepdim=False) => NuclearNorm",
                     "Tensor (Tensor input, IntList dim, Bool keepdim=False) => NuclearNormDim"],
    "cdist": ["Tensor (Tensor x1, Tensor x2, Float p=2.0, String compute_mode=None) => Cdist"],
    "diagonal": method("Tensor (Tensor input, Int offset=0, Int dim1=0, Int dim2=1) => Diagonal"),
    "diag": method("Tensor (Tensor input, Int diagonal=0) => Diag"),
    "diag_embed": method("Tensor (Tensor input, Int offset=0, Int dim1=-2, Int dim2=-1) => DiagEmbed"),
    "diagflat": method("Tensor (Tensor input, Int offset=0) => Diagflat"),
    "diagonal_copy": ["Tensor (Tensor input, Int offset=0, Int dim1=0, Int dim2=1) => DiagonalCopy"],
    "diagonal_scatter": method("Tensor (Tensor input, Tensor src, Int offset=0, Int dim1=0, Int dim2=1) "
                               "=> DiagonalScatter"),
    "fill_diagonal_": method("Tensor (Tensor input, Scalar fill_value, Bool wrap=False) => FillDiagonal"),
    "trace": method("Tensor (Tensor input) => Trace"),
    "addmm": method(("Tensor (Tensor input, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, "
                     "Bool inplace=False) => Addmm"), inplace=True),
    "addbmm": method(("Tensor (Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1, "
                      "Bool inplace=False) => Addbmm"), inplace=True),
    "addmv": method(("Tensor (Tensor input, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1, "
                     "Bool inplace=False) => Addmv"), inplace=True),
    "addmv_": ["Tensor (Tensor input, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) => AddmvInplace"],
    "addr": method(("Tensor (Tensor input, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1, "
                    "Bool inplace=False) => Addr"), inplace=True),
    "mv": method("Tensor (Tensor input, Tensor vec) => Mv"),
    "vdot": method("Tensor (Tensor input, Tensor other) => Vdot"),
    "inner": method("Tensor (Tensor input, Tensor other) => Inner"),
    "kron": method("Tensor (Tensor input, Tensor other) => Kron"),
    "ger": method("Tensor (Tensor input, Tensor vec2) => Outer"),
    "chain_matmul": ["Tensor (TensorTuple matrices) => ChainMatmul"],
    "cross": method("Tensor (Tensor input, Tensor other, Int dim=None) => Cross"),
    "cov": method("Tensor (Tensor input, *, Int correction=1, Tensor fweights=None, Tensor aweights=None) => Cov"),
    "corrcoef": method("Tensor (Tensor input) => Corrcoef"),
    "det": method("Tensor (Tensor input) => LinalgDet"),
    "logdet": method("Tensor (Tensor input) => Logdet"),
    "slogdet": method("TensorTuple (Tensor input) => Slogdet"),
    "inverse": method("Tensor (Tensor input) => LinalgInv"),
    "pinverse": method("Tensor (Tensor input, Float rcond=1e-15) => Pinverse"),
    "matrix_power": method("Tensor (Tensor input, Int n) => MatrixPower"),
    "matrix_exp": method("Tensor (Tensor input) => MatrixExp"),
    "cholesky": method("Tensor (Tensor input, Bool upper=False) => LinalgCholesky"),
    "cholesky_solve": method("Tensor (Tensor input, Tensor input2, Bool upper=False) => CholeskySolve"),
    "cholesky_inverse": method("Tensor (Tensor input, Bool upper=False) => CholeskyInverse"),
    "qr": method("TensorTuple (Tensor input, Bool some=True) => Qr"),
    "svd": method("TensorTuple (Tensor input, Bool some=True, Bool compute_uv=True) => Svd"),
    "triangular_solve": method("TensorTuple (Tensor input, Tensor A, Bool upper=True, Bool transpose=False, "
                               "Bool unitriangular=False) => TriangularSolve"),
    "lu": method("TensorTuple (Tensor input, Bool pivot=True, Bool get_infos=False) => Lu"),
    "lu_unpack": [("TensorTuple (Tensor LU_data, Tensor LU_pivots, Bool unpack_data=True, Bool unpack_pivots=True) "
                   "=> LuUnpack")],
    "lu_solve": method("Tensor (Tensor input, Tensor LU_data, Tensor LU_pivots) => LuSolve"),
    "linalg_inv": ["Tensor (Tensor A) => LinalgInv"],
    "linalg_inv_ex": ["TensorTuple (Tensor A, *, Bool check_errors=False) => LinalgInvEx"],
    "linalg_det": ["Tensor (Tensor A) => LinalgDet"],
    "linalg_slogdet": ["TensorTuple (Tensor A) => LinalgSlogdet"],
    "linalg_solve": ["Tensor (Tensor A, Tensor B, *, Bool left=True) => LinalgSolve"],
    "linalg_solve_ex": ["TensorTuple (Tensor A, Tensor B, *, Bool left=True, Bool check_errors=False) => LinalgSolveEx"],
    "linalg_solve_triangular": [("Tensor (Tensor A, Tensor B, *, Bool upper, Bool left=True, "
                                 "Bool unitriangular=False) => LinalgSolveTriangular")],
    "linalg_cholesky": ["Tensor (Tensor A, *, Bool upper=False) => LinalgCholesky"],
    "linalg_cholesky_ex": ["TensorTuple (Tensor A, *, Bool upper=False, Bool check_errors=False) => LinalgCholeskyEx"],
    "linalg_qr": ["TensorTuple (Tensor A, String mode='reduced') => LinalgQr"],
    "linalg_svd": ["TensorTuple (Tensor A, Bool full_matrices=True, *, String driver=None) => LinalgSvd"],
    "linalg_svdvals": ["Tensor (Tensor A, *, String driver=None) => LinalgSvdvals"],
    "linalg_eigh": ["TensorTuple (Tensor A, String UPLO='L') => LinalgEigh"],
    "linalg_eigvalsh": ["Tensor (Tensor A, String UPLO='L') => LinalgEigvalsh"],
    "linalg_pinv": ["Tensor (Tensor A, *, Float atol=None, Float rtol=None, Bool hermitian=False) => LinalgPinv",
                    "Tensor (Tensor A, Float rcond, Bool hermitian=False) => LinalgPinvRcond"],
    "linalg_matrix_rank": [
        "Tensor (Tensor A, *, Float atol=None, Float rtol=None, Bool hermitian=False) => LinalgMatrixRank",
        "Tensor (Tensor A, Float tol, Bool hermitian=False) => LinalgMatrixRankTol"],
    "linalg_matrix_power": ["Tensor (Tensor A, Int n) => MatrixPower"],
    "linalg_matrix_exp": ["Tensor (Tensor A) => MatrixExp"],
    "linalg_lu_factor": ["TensorTuple (Tensor A, *, Bool pivot=True) => LinalgLuFactor"],
    "linalg_lu_factor_ex": ["TensorTuple (Tensor A, *, Bool pivot=True, Bool check_errors=False) => LinalgLuFactorEx"],
    "linalg_lu": ["TensorTuple (Tensor A, *, Bool pivot=True) => LinalgLu"],
    "linalg_lu_solve": [("Tensor (Tensor LU, Tensor pivots, Tensor B, *, Bool left=True, Bool adjoint=False) "
                         "=> LinalgLuSolve")],
    "linalg_lstsq": ["TensorTuple (Tensor A, Tensor B, Float rcond=None, *, String driver=None) => LinalgLstsq"],
    "linalg_cond": ["Tensor (Tensor A, Scalar p=None) => LinalgCond", "Tensor (Tensor A, String p) => LinalgCond"],
    "linalg_norm": [
        "Tensor (Tensor A, Scalar ord=None, IntList dim=None, Bool keepdim=False, *, DataType dtype=None) => LinalgNorm",
        "Tensor (Tensor A, String ord, IntList dim=None, Bool keepdim=False, *, DataType dtype=None) => LinalgNorm"],
    "linalg_vector_norm": [("Tensor (Tensor x, Scalar ord=2, IntList dim=None, Bool keepdim=False, *, "
                            "DataType dtype=None) => LinalgVectorNorm")],
    "linalg_matrix_norm": [
        ("Tensor (Tensor A, String ord='fro', IntList dim=[-2, -1], Bool keepdim=False, *, DataType dtype=None) "
         "=> LinalgMatrixNorm"),
        ("Tensor (Tensor A, Scalar ord, IntList dim=[-2, -1], Bool keepdim=False, *, DataType dtype=None) "
         "=> LinalgMatrixNorm")],
    "linalg_cross": ["Tensor (Tensor input, Tensor other, *, Int dim=-1) => LinalgCross"],
    "linalg_multi_dot": ["Tensor (TensorTuple tensors) => MultiDot"],
    "linalg_vecdot": ["Tensor (Tensor x, Tensor y, *, Int dim=-1) => Vecdot"],
    "linalg_diagonal": ["Tensor (Tensor A, *, Int offset=0, Int dim1=-2, Int dim2=-1) => Diagonal"],
    "linalg_tensorinv": ["Tensor (Tensor A, Int ind=2) => LinalgTensorinv"],
    "linalg_tensorsolve": ["Tensor (Tensor A, Tensor B, IntList dims=None) => LinalgTensorsolve"],
    "linalg_vander": ["Tensor (Tensor x, *, Int N=None) => LinalgVander"],
    "linalg_householder_product": ["Tensor (Tensor A, Tensor tau) => HouseholderProduct"],
    "geqrf": method("TensorTuple (Tensor input) => Geqrf"),
    "orgqr": method("Tensor (Tensor input, Tensor tau) => HouseholderProduct"),
    "ormqr": method("Tensor (Tensor input, Tensor input2, Tensor input3, Bool left=True, Bool transpose=False) "
                    "=> Ormqr"),
    # ---- convolution, pooling, interpolate (functors/conv.py); padding may also be "valid" or "same"
    "conv1d": [
        ("Tensor (Tensor input, Tensor weight, Tensor bias=None, IntList[1] stride=1, IntList[1] padding=0, "
         "IntList[1] dilation=1, Int groups=1) => Conv1d"),
        ("Tensor (Tensor input, Tensor weight, Tensor bias=None, IntList[1] stride=1, String padding=\"valid\", "
         "IntList[1] dilation=1, Int groups=1) => Conv1d"),
    ],
    "conv_transpose1d": [("Tensor (Tensor input, Tensor weight, Tensor bias=None, IntList[1] stride=1, "
                          "IntList[1] padding=0, IntList[1] output_padding=0, Int groups=1, IntList[1] dilation=1) "
                          "=> ConvTranspose1d")],
    "max_pool1d": [("Tensor (Tensor input, IntList[1] kernel_size, IntList[1] stride=None, IntList[1] padding=0, "
                    "IntList[1] dilation=1, Bool ceil_mode=False, Bool return_indices=False) => MaxPool1d")],
    "avg_pool1d": [("Tensor (Tensor input, IntList[1] kernel_size, IntList[1] stride=None, IntList[1] padding=0, "
                    "Bool ceil_mode=False, Bool count_include_pad=True) => AvgPool1d")],
    "adaptive_avg_pool1d": ["Tensor (Tensor input, IntList[1] output_size) => AdaptiveAvgPool1d"],
    "conv2d": [
        ("Tensor (Tensor input, Tensor weight, Tensor bias=None, IntList[2] stride=1, IntList[2] padding=0, "
         "IntList[2] dilation=1, Int groups=1) => Conv2d"),
        ("Tensor (Tensor input, Tensor weight, Tensor bias=None, IntList[2] stride=1, String padding=\"valid\", "
         "IntList[2] dilation=1, Int groups=1) => Conv2d"),
    ],
    "conv_transpose2d": [("Tensor (Tensor input, Tensor weight, Tensor bias=None, IntList[2] stride=1, "
                          "IntList[2] padding=0, IntList[2] output_padding=0, Int groups=1, IntList[2] dilation=1) "
                          "=> ConvTranspose2d")],
    "max_pool2d": [("Tensor (Tensor input, IntList[2] kernel_size, IntList[2] stride=None, IntList[2] padding=0, "
                    "IntList[2] dilation=1, Bool ceil_mode=False, Bool return_indices=False) => MaxPool2d")],
    "avg_pool2d": [("Tensor (Tensor input, IntList[2] kernel_size, IntList[2] stride=None, IntList[2] padding=0, "
                    "Bool ceil_mode=False, Bool count_include_pad=True, Int divisor_override=None) => AvgPool2d")],
    "adaptive_avg_pool2d": ["Tensor (Tensor input, OptionalIntList output_size) => AdaptiveAvgPool2d"],
    "conv3d": [
        ("Tensor (Tensor input, Tensor weight, Tensor bias=None, IntList[3] stride=1, IntList[3] padding=0, "
         "IntList[3] dilation=1, Int groups=1) => Conv3d"),
        ("Tensor (Tensor input, Tensor weight, Tensor bias=None, IntList[3] stride=1, String padding=\"valid\", "
         "IntList[3] dilation=1, Int groups=1) => Conv3d"),
    ],
    "conv_transpose3d": [("Tensor (Tensor input, Tensor weight, Tensor bias=None, IntList[3] stride=1, "
                          "IntList[3] padding=0, IntList[3] output_padding=0, Int groups=1, IntList[3] dilation=1) "
                          "=> ConvTranspose3d")],
    "max_pool3d": [("Tensor (Tensor input, IntList[3] kernel_size, IntList[3] stride=None, IntList[3] padding=0, "
                    "IntList[3] dilation=1, Bool ceil_mode=False, Bool return_indices=False) => MaxPool3d")],
    "avg_pool3d": [("Tensor (Tensor input, IntList[3] kernel_size, IntList[3] stride=None, IntList[3] padding=0, "
                    "Bool ceil_mode=False, Bool count_include_pad=True, Int divisor_override=None) => AvgPool3d")],
    "adaptive_avg_pool3d": ["Tensor (Tensor input, OptionalIntList output_size) => AdaptiveAvgPool3d"],
    "interpolate": [("Tensor (Tensor input, IntList size=None, FloatList scale_factor=None, String mode=\"nearest\", "
                     "Bool align_corners=None, Bool recompute_scale_factor=None, Bool antialias=False) "
                     "=> Interpolate")],
    # ---- more pooling, unpooling, fold / unfold, shuffles, grid sampling (functors/conv.py)
    "max_pool1d_with_indices": [("TensorTuple (Tensor input, IntList[1] kernel_size, IntList[1] stride=None, "
                                  "IntList[1] padding=0, IntList[1] dilation=1, Bool ceil_mode=False, "
                                  "Bool return_indices=False) => MaxPool1dWithIndices")],
    "max_pool2d_with_indices": [("TensorTuple (Tensor input, IntList[2] kernel_size, IntList[2] stride=None, "
                                  "IntList[2] padding=0, IntList[2] dilation=1, Bool ceil_mode=False, "
                                  "Bool return_indices=False) => MaxPool2dWithIndices")],
    "max_pool3d_with_indices": [("TensorTuple (Tensor input, IntList[3] kernel_size, IntList[3] stride=None, "
                                  "IntList[3] padding=0, IntList[3] dilation=1, Bool ceil_mode=False, "
                                  "Bool return_indices=False) => MaxPool3dWithIndices")],
    "adaptive_max_pool1d": [("Tensor (Tensor input, IntList[1] output_size, Bool return_indices=False) "
                             "=> AdaptiveMaxPool1d")],
    "adaptive_max_pool1d_with_indices": [("TensorTuple (Tensor input, IntList[1] output_size, "
                                          "Bool return_indices=False) => AdaptiveMaxPool1dWithIndices")],
    "adaptive_max_pool2d": [("Tensor (Tensor input, OptionalIntList output_size, Bool return_indices=False) "
                             "=> AdaptiveMaxPool2d")],
    "adaptive_max_pool2d_with_indices": [("TensorTuple (Tensor input, OptionalIntList output_size, "
                                          "Bool return_indices=False) => AdaptiveMaxPool2dWithIndices")],
    "adaptive_max_pool3d": [("Tensor (Tensor input, OptionalIntList output_size, Bool return_indices=False) "
                             "=> AdaptiveMaxPool3d")],
    "adaptive_max_pool3d_with_indices": [("TensorTuple (Tensor input, OptionalIntList output_size, "
                                          "Bool return_indices=False) => AdaptiveMaxPool3dWithIndices")],
    "fractional_max_pool2d": [("Tensor (Tensor input, IntList[2] kernel_size, IntList[2] output_size=None, "
                               "FloatList output_ratio=None, Bool return_indices=False, "
                               "Tensor _random_samples=None) => FractionalMaxPool2d")],
    "fractional_max_pool2d_with_indices": [("TensorTuple (Tensor input, IntList[2] kernel_size, "
                                            "IntList[2] output_size=None, FloatList output_ratio=None, "
                                            "Bool return_indices=False, Tensor _random_samples=None) "
                                            "=> FractionalMaxPool2dWithIndices")],
    "fractional_max_pool3d": [("Tensor (Tensor input, IntList[3] kernel_size, IntList[3] output_size=None, "
                               "FloatList output_ratio=None, Bool return_indices=False, "
                               "Tensor _random_samples=None) => FractionalMaxPool3d")],
    "fractional_max_pool3d_with_indices": [("TensorTuple (Tensor input, IntList[3] kernel_size, "
                                            "IntList[3] output_size=None, FloatList output_ratio=None, "
                                            "Bool return_indices=False, Tensor _random_samples=None) "
                                            "=> FractionalMaxPool3dWithIndices")],
    "lp_pool1d": [("Tensor (Tensor input, Scalar norm_type, IntList[1] kernel_size, IntList[1] stride=None, "
                   "Bool ceil_mode=False) => LpPool1d")],
    "max_unpool1d": [("Tensor (Tensor input, Tensor indices, IntList[1] kernel_size, IntList[1] stride=None, "
                      "IntList[1] padding=0, IntList output_size=None) => MaxUnpool1d")],
    "lp_pool2d": [("Tensor (Tensor input, Scalar norm_type, IntList[2] kernel_size, IntList[2] stride=None, "
                   "Bool ceil_mode=False) => LpPool2d")],
    "max_unpool2d": [("Tensor (Tensor input, Tensor indices, IntList[2] kernel_size, IntList[2] stride=None, "
                      "IntList[2] padding=0, IntList output_size=None) => MaxUnpool2d")],
    "lp_pool3d": [("Tensor (Tensor input, Scalar norm_type, IntList[3] kernel_size, IntList[3] stride=None, "
                   "Bool ceil_mode=False) => LpPool3d")],
    "max_unpool3d": [("Tensor (Tensor input, Tensor indices, IntList[3] kernel_size, IntList[3] stride=None, "
                      "IntList[3] padding=0, IntList output_size=None) => MaxUnpool3d")],
    "unfold": [("Tensor (Tensor input, IntList kernel_size, IntList dilation=1, IntList padding=0, "
                "IntList stride=1) => Unfold")],
    "fold": [("Tensor (Tensor input, IntList output_size, IntList kernel_size, IntList dilation=1, IntList padding=0, "
              "IntList stride=1) => Fold")],
    "pixel_shuffle": ["Tensor (Tensor input, Int upscale_factor) => PixelShuffle"],
    "pixel_unshuffle": ["Tensor (Tensor input, Int downscale_factor) => PixelUnshuffle"],
    "channel_shuffle": ["Tensor (Tensor input, Int groups) => ChannelShuffle"],
    "native_channel_shuffle": ["Tensor (Tensor input, Int groups) => ChannelShuffle"],
    "conv_tbc": ["Tensor (Tensor input, Tensor weight, Tensor bias, Int pad=0) => ConvTbc"],
    "grid_sample": [("Tensor (Tensor input, Tensor grid, String mode=\"bilinear\", String padding_mode=\"zeros\", "
                     "Bool align_corners=None) => GridSample")],
    "affine_grid": ["Tensor (Tensor theta, Shape size, Bool align_corners=None) => AffineGrid"],
    # ---- neural network: softmax, losses, dropout, normalisation, embedding, attention
    "softmax": method("Tensor (Tensor input, Int dim=None, *, DataType dtype=None, Int _stacklevel=3) => Softmax"),
    "log_softmax": method("Tensor (Tensor input, Int dim=None, *, DataType dtype=None, Int _stacklevel=3) => LogSoftmax"),
    "cross_entropy": [("Tensor (Tensor input, Tensor target, Tensor weight=None, Bool size_average=None, "
                       "Int ignore_index=-100, Bool reduce=None, String reduction=\"mean\", Float label_smoothing=0.0) "
                       "=> CrossEntropy")],
    "nll_loss": [("Tensor (Tensor input, Tensor target, Tensor weight=None, Bool size_average=None, "
                  "Int ignore_index=-100, Bool reduce=None, String reduction=\"mean\") => NLLLoss")],
    "mse_loss": [("Tensor (Tensor input, Tensor target, Bool size_average=None, Bool reduce=None, "
                  "String reduction=\"mean\") => MseLoss")],
    "l1_loss": [("Tensor (Tensor input, Tensor target, Bool size_average=None, Bool reduce=None, "
                 "String reduction=\"mean\") => L1Loss")],
    "smooth_l1_loss": [("Tensor (Tensor input, Tensor target, Bool size_average=None, Bool reduce=None, "
                        "String reduction=\"mean\", Float beta=1.0) => SmoothL1Loss")],
    "huber_loss": ["Tensor (Tensor input, Tensor target, String reduction=\"mean\", Float delta=1.0) => HuberLoss"],
    "binary_cross_entropy": [("Tensor (Tensor input, Tensor target, Tensor weight=None, Bool size_average=None, "
                              "Bool reduce=None, String reduction=\"mean\") => BinaryCrossEntropy")],
    "binary_cross_entropy_with_logits": [("Tensor (Tensor input, Tensor target, Tensor weight=None, "
                                          "Bool size_average=None, Bool reduce=None, String reduction=\"mean\", "
                                          "Tensor pos_weight=None) => BinaryCrossEntropyWithLogits")],
    "kl_div": [("Tensor (Tensor input, Tensor target, Bool size_average=None, Bool reduce=None, "
                "String reduction=\"mean\", Bool log_target=False) => KLDiv")],
    "dropout": [("Tensor (Tensor input, Float p=0.5, Bool training=True, Bool inplace=False, *, "
                 "Generator generator=None) => Dropout")],
    "layer_norm": [("Tensor (Tensor input, Shape normalized_shape, Tensor weight=None, Tensor bias=None, "
                    "Float eps=1e-05) => LayerNorm")],
    "group_norm": [("Tensor (Tensor input, Int num_groups, Tensor weight=None, Tensor bias=None, Float eps=1e-05) "
                    "=> GroupNorm")],
    "batch_norm": [("Tensor (Tensor input, Tensor running_mean=None, Tensor running_var=None, Tensor weight=None, "
                    "Tensor bias=None, Bool training=False, Float momentum=0.1, Float eps=1e-05) => BatchNorm")],
    "embedding": [("Tensor (Tensor input, Tensor weight, Int padding_idx=None, Float max_norm=None, "
                   "Float norm_type=2.0, Bool scale_grad_by_freq=False, Bool sparse=False) => Embedding")],
    "one_hot": ["Tensor (Tensor tensor, Int num_classes=-1) => OneHot"],
    "scaled_dot_product_attention": [("Tensor (Tensor query, Tensor key, Tensor value, Tensor attn_mask=None, "
                                      "Float dropout_p=0.0, Bool is_causal=False, *, Float scale=None, "
                                      "Bool enable_gqa=False) => ScaledDotProductAttention")],
    # ---- neural network (nn sweep): more activations, distances, dropout variants, normalisation, losses
    "celu": ["Tensor (Tensor input, Float alpha=1.0, Bool inplace=False) => Celu"],
    "hardshrink": method("Tensor (Tensor input, Float lambd=0.5) => Hardshrink"),
    "softshrink": ["Tensor (Tensor input, Float lambd=0.5) => Softshrink"],
    "threshold": ["Tensor (Tensor input, Float threshold, Float value, Bool inplace=False) => Threshold"],
    "tanhshrink": ["Tensor (Tensor input) => Tanhshrink"],
    "softsign": ["Tensor (Tensor input) => Softsign"],
    "logsigmoid": ["Tensor (Tensor input) => LogSigmoid"],
    "softmin": ["Tensor (Tensor input, Int dim=None, Int _stacklevel=3, DataType dtype=None) => Softmin"],
    "glu": ["Tensor (Tensor input, Int dim=-1) => Glu"],
    "prelu": method("Tensor (Tensor input, Tensor weight) => Prelu"),
    "rrelu": [("Tensor (Tensor input, Float lower=0.125, Float upper=0.3333333333333333, Bool training=False, "
               "Bool inplace=False, *, Generator generator=None) => Rrelu")],
    "gumbel_softmax": [("Tensor (Tensor logits, Float tau=1.0, Bool hard=False, Float eps=1e-10, Int dim=-1) "
                        "=> GumbelSoftmax")],
    "relu_": ["Tensor (Tensor input) => ReluInplace"],
    "elu_": ["Tensor (Tensor input, Float alpha=1.0) => EluInplace"],
    "selu_": ["Tensor (Tensor input) => SeluInplace"],
    "celu_": ["Tensor (Tensor input, Float alpha=1.0) => CeluInplace"],
    "leaky_relu_": ["Tensor (Tensor input, Float negative_slope=0.01) => LeakyReluInplace"],
    "hardtanh_": ["Tensor (Tensor input, Float min_val=-1.0, Float max_val=1.0) => HardtanhInplace"],
    "rrelu_": [("Tensor (Tensor input, Float lower=0.125, Float upper=0.3333333333333333, Bool training=False, *, "
                "Generator generator=None) => RreluInplace")],
    "threshold_": ["Tensor (Tensor input, Float threshold, Float value) => ThresholdInplace"],
    "normalize": ["Tensor (Tensor input, Float p=2.0, IntList dim=1, Float eps=1e-12, Tensor out=None) => Normalize"],
    "cosine_similarity": ["Tensor (Tensor x1, Tensor x2, Int dim=1, Float eps=1e-08) => CosineSimilarity"],
    "pairwise_distance": [("Tensor (Tensor x1, Tensor x2, Float p=2.0, Float eps=1e-06, Bool keepdim=False) "
                           "=> PairwiseDistance")],
    "pdist": ["Tensor (Tensor input, Float p=2.0) => Pdist"],
    "alpha_dropout": ["Tensor (Tensor input, Float p=0.5, Bool training=False, Bool inplace=False) => AlphaDropout"],
    "feature_alpha_dropout": [("Tensor (Tensor input, Float p=0.5, Bool training=False, Bool inplace=False) "
                               "=> FeatureAlphaDropout")],
    "feature_dropout": ["Tensor (Tensor input, Float p=0.5, Bool train=True, Bool inplace=False) => FeatureDropout"],
    "dropout_": ["Tensor (Tensor input, Float p=0.5, Bool train=True) => DropoutInplace"],
    "alpha_dropout_": ["Tensor (Tensor input, Float p=0.5, Bool train=False) => AlphaDropoutInplace"],
    "feature_dropout_": ["Tensor (Tensor input, Float p=0.5, Bool train=True) => FeatureDropoutInplace"],
    "feature_alpha_dropout_": ["Tensor (Tensor input, Float p=0.5, Bool train=False) => FeatureAlphaDropoutInplace"],
    "dropout1d": ["Tensor (Tensor input, Float p=0.5, Bool training=True, Bool inplace=False) => Dropout1d"],
    "dropout2d": ["Tensor (Tensor input, Float p=0.5, Bool training=True, Bool inplace=False) => Dropout2d"],
    "dropout3d": ["Tensor (Tensor input, Float p=0.5, Bool training=True, Bool inplace=False) => Dropout3d"],
    "instance_norm": [("Tensor (Tensor input, Tensor running_mean=None, Tensor running_var=None, Tensor weight=None, "
                       "Tensor bias=None, Bool use_input_stats=True, Float momentum=0.1, Float eps=1e-05) "
                       "=> InstanceNorm")],
    "local_response_norm": [("Tensor (Tensor input, Int size, Float alpha=0.0001, Float beta=0.75, Float k=1.0) "
                             "=> LocalResponseNorm")],
    "rms_norm": ["Tensor (Tensor input, Shape normalized_shape, Tensor weight=None, Float eps=None) => RmsNorm"],
    "cosine_embedding_loss": [("Tensor (Tensor input1, Tensor input2, Tensor target, Float margin=0.0, "
                               "Bool size_average=None, Bool reduce=None, String reduction=\"mean\") "
                               "=> CosineEmbeddingLoss")],
    "hinge_embedding_loss": [("Tensor (Tensor input, Tensor target, Float margin=1.0, Bool size_average=None, "
                              "Bool reduce=None, String reduction=\"mean\") => HingeEmbeddingLoss")],
    "margin_ranking_loss": [("Tensor (Tensor input1, Tensor input2, Tensor target, Float margin=0.0, "
                             "Bool size_average=None, Bool reduce=None, String reduction=\"mean\") "
                             "=> MarginRankingLoss")],
    "soft_margin_loss": [("Tensor (Tensor input, Tensor target, Bool size_average=None, Bool reduce=None, "
                          "String reduction=\"mean\") => SoftMarginLoss")],
    "multilabel_soft_margin_loss": [("Tensor (Tensor input, Tensor target, Tensor weight=None, "
                                     "Bool size_average=None, Bool reduce=None, String reduction=\"mean\") "
                                     "=> MultiLabelSoftMarginLoss")],
    "multi_margin_loss": [("Tensor (Tensor input, Tensor target, Int p=1, Float margin=1.0, Tensor weight=None, "
                           "Bool size_average=None, Bool reduce=None, String reduction=\"mean\") "
                           "=> MultiMarginLoss")],
    "multilabel_margin_loss": [("Tensor (Tensor input, Tensor target, Bool size_average=None, Bool reduce=None, "
                                "String reduction=\"mean\") => MultiLabelMarginLoss")],
    "poisson_nll_loss": [("Tensor (Tensor input, Tensor target, Bool log_input=True, Bool full=False, "
                          "Bool size_average=None, Float eps=1e-08, Bool reduce=None, String reduction=\"mean\") "
                          "=> PoissonNllLoss")],
    "gaussian_nll_loss": [
        ("Tensor (Tensor input, Tensor target, Tensor var, Bool full=False, Float eps=1e-06, "
         "String reduction=\"mean\") => GaussianNllLoss"),
        ("Tensor (Tensor input, Tensor target, Float var, Bool full=False, Float eps=1e-06, "
         "String reduction=\"mean\") => GaussianNllLoss")],
    "triplet_margin_loss": [("Tensor (Tensor anchor, Tensor positive, Tensor negative, Float margin=1.0, "
                             "Float p=2.0, Float eps=1e-06, Bool swap=False, Bool size_average=None, "
                             "Bool reduce=None, String reduction=\"mean\") => TripletMarginLoss")],
    "embedding_bag": [("Tensor (Tensor input, Tensor weight, Tensor offsets=None, Float max_norm=None, "
                       "Float norm_type=2.0, Bool scale_grad_by_freq=False, String mode=\"mean\", Bool sparse=False, "
                       "Tensor per_sample_weights=None, Bool include_last_offset=False, Int padding_idx=None) "
                       "=> EmbeddingBag")],
    "ctc_loss": [
        ("Tensor (Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, Int blank=0, "
         "String reduction=\"mean\", Bool zero_infinity=False) => CtcLoss"),
        ("Tensor (Tensor log_probs, Tensor targets, IntList input_lengths, IntList target_lengths, Int blank=0, "
         "String reduction=\"mean\", Bool zero_infinity=False) => CtcLoss")],
    # ---- [compat t1] native_* forms, SyncBatchNorm's pieces, the generic convolution, grid samplers with enum ints
    # (functors/nn.py, Note [Native forms]) and the recurrent functions with flat weights (functors/rnn.py)
    "native_layer_norm": [("TensorTuple (Tensor input, Shape normalized_shape, Tensor? weight, Tensor? bias, "
                           "Float eps) => NativeLayerNorm")],
    "native_batch_norm": [("TensorTuple (Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
                           "Tensor? running_var, Bool training, Float momentum, Float eps) => NativeBatchNorm")],
    "native_group_norm": [("TensorTuple (Tensor input, Tensor? weight, Tensor? bias, Int N, Int C, Int HxW, "
                           "Int group, Float eps) => NativeGroupNorm")],
    "native_dropout": ["TensorTuple (Tensor input, Float p, Bool? train) => NativeDropout"],
    "norm_except_dim": ["Tensor (Tensor v, Float pow=2, Int dim=0) => NormExceptDim"],
    "batch_norm_stats": ["TensorTuple (Tensor input, Float eps) => BatchNormStats"],
    "batch_norm_elemt": [("Tensor (Tensor input, Tensor? weight, Tensor? bias, Tensor mean, Tensor invstd, "
                          "Float eps) => BatchNormElemt")],
    "batch_norm_gather_stats": [("TensorTuple (Tensor input, Tensor mean, Tensor invstd, Tensor? running_mean, "
                                 "Tensor? running_var, Float momentum, Float eps, Int count) => BatchNormGatherStats")],
    "batch_norm_gather_stats_with_counts": [
        ("TensorTuple (Tensor input, Tensor mean, Tensor invstd, Tensor? running_mean, Tensor? running_var, "
         "Float momentum, Float eps, Tensor counts) => BatchNormGatherStatsWithCounts")],
    "batch_norm_update_stats": [("TensorTuple (Tensor input, Tensor? running_mean, Tensor? running_var, "
                                 "Float momentum) => BatchNormUpdateStats")],
    "batch_norm_backward_reduce": [("TensorTuple (Tensor grad_out, Tensor input, Tensor mean, Tensor invstd, "
                                    "Tensor? weight, Bool input_g, Bool weight_g, Bool bias_g) "
                                    "=> BatchNormBackwardReduce")],
    "batch_norm_backward_elemt": [("Tensor (Tensor grad_out, Tensor input, Tensor mean, Tensor invstd, "
                                   "Tensor? weight, Tensor sum_dy, Tensor sum_dy_xmu, Tensor count) "
                                   "=> BatchNormBackwardElemt")],
    "convolution": [("Tensor (Tensor input, Tensor weight, Tensor? bias, IntList stride, IntList padding, "
                     "IntList dilation, Bool transposed, IntList output_padding, Int groups) => Convolution")],
    "affine_grid_generator": ["Tensor (Tensor theta, Shape size, Bool align_corners) => AffineGridGenerator"],
    "grid_sampler": [("Tensor (Tensor input, Tensor grid, Int interpolation_mode, Int padding_mode, "
                      "Bool align_corners) => GridSampler")],
    "grid_sampler_2d": [("Tensor (Tensor input, Tensor grid, Int interpolation_mode, Int padding_mode, "
                         "Bool align_corners) => GridSampler2d")],
    "grid_sampler_3d": [("Tensor (Tensor input, Tensor grid, Int interpolation_mode, Int padding_mode, "
                         "Bool align_corners) => GridSampler3d")],
    "lstm": [
        ("TensorTuple (Tensor input, TensorTuple hx, TensorTuple params, Bool has_biases, Int num_layers, "
         "Float dropout, Bool train, Bool bidirectional, Bool batch_first) => Lstm"),
        ("TensorTuple (Tensor data, Tensor batch_sizes, TensorTuple hx, TensorTuple params, Bool has_biases, "
         "Int num_layers, Float dropout, Bool train, Bool bidirectional) => LstmPacked")],
    "gru": [
        ("TensorTuple (Tensor input, Tensor hx, TensorTuple params, Bool has_biases, Int num_layers, "
         "Float dropout, Bool train, Bool bidirectional, Bool batch_first) => Gru"),
        ("TensorTuple (Tensor data, Tensor batch_sizes, Tensor hx, TensorTuple params, Bool has_biases, "
         "Int num_layers, Float dropout, Bool train, Bool bidirectional) => GruPacked")],
    "rnn_tanh": [
        ("TensorTuple (Tensor input, Tensor hx, TensorTuple params, Bool has_biases, Int num_layers, "
         "Float dropout, Bool train, Bool bidirectional, Bool batch_first) => RnnTanh"),
        ("TensorTuple (Tensor data, Tensor batch_sizes, Tensor hx, TensorTuple params, Bool has_biases, "
         "Int num_layers, Float dropout, Bool train, Bool bidirectional) => RnnTanhPacked")],
    "rnn_relu": [
        ("TensorTuple (Tensor input, Tensor hx, TensorTuple params, Bool has_biases, Int num_layers, "
         "Float dropout, Bool train, Bool bidirectional, Bool batch_first) => RnnRelu"),
        ("TensorTuple (Tensor data, Tensor batch_sizes, Tensor hx, TensorTuple params, Bool has_biases, "
         "Int num_layers, Float dropout, Bool train, Bool bidirectional) => RnnReluPacked")],
    "lstm_cell": [("TensorTuple (Tensor input, TensorTuple hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
                   "Tensor? b_hh=None) => LstmCell")],
    "gru_cell": [("Tensor (Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
                  "Tensor? b_hh=None) => GruCell")],
    "rnn_tanh_cell": [("Tensor (Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
                       "Tensor? b_hh=None) => RnnTanhCell")],
    "rnn_relu_cell": [("Tensor (Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
                       "Tensor? b_hh=None) => RnnReluCell")],
    # ---- end [compat t1] nn
    # ---- shape
    "reshape": method("Tensor (Tensor input, Shape shape) => Reshape"),
    "transpose": method("Tensor (Tensor input, Int dim0, Int dim1) => Transpose"),
    # ---- shape and joining (functors/shape.py)
    "view": method("Tensor (Tensor input, Shape shape) => View", "Tensor (Tensor input, DataType dtype) => ViewDtype"),
    "permute": method("Tensor (Tensor input, IntList dims) => Permute"),
    "t": method("Tensor (Tensor input) => T"),
    "flatten": method("Tensor (Tensor input, Int start_dim=0, Int end_dim=-1) => Flatten"),
    "unflatten": method("Tensor (Tensor input, Int dim, Shape sizes) => Unflatten"),
    "squeeze": method("Tensor (Tensor input, IntList dim=None) => Squeeze"),
    "unsqueeze": method("Tensor (Tensor input, Int dim) => Unsqueeze"),
    "expand": method("Tensor (Tensor input, Shape size) => Expand"),
    "broadcast_to": method("Tensor (Tensor input, Shape size) => Expand"),
    "expand_as": method("Tensor (Tensor input, Tensor other) => ExpandAs"),
    "repeat": method("Tensor (Tensor input, Shape repeats) => Repeat"),
    "tile": method("Tensor (Tensor input, Shape dims) => Tile"),
    "cat": ["Tensor (TensorTuple tensors, Int dim=0) => Cat"],
    "concat": ["Tensor (TensorTuple tensors, Int dim=0) => Cat"],
    "stack": ["Tensor (TensorTuple tensors, Int dim=0) => Stack"],
    "split": method("TensorTuple (Tensor input, Int split_size_or_sections, Int dim=0) => Split",
              "TensorTuple (Tensor input, IntList split_size_or_sections, Int dim=0) => SplitWithSizes"),
    "chunk": method("TensorTuple (Tensor input, Int chunks, Int dim=0) => Chunk"),
    "unbind": method("TensorTuple (Tensor input, Int dim=0) => Unbind"),
    "narrow": method("Tensor (Tensor input, Int dim, Int start, Int length) => Narrow"),
    "flip": method("Tensor (Tensor input, IntList dims) => Flip"),
    "roll": method("Tensor (Tensor input, IntList shifts, IntList dims=None) => Roll"),
    "tril": method("Tensor (Tensor input, Int diagonal=0, *, Bool inplace=False) => Tril", inplace=True),
    "triu": method("Tensor (Tensor input, Int diagonal=0, *, Bool inplace=False) => Triu", inplace=True),
    "pad": ['Tensor (Tensor input, IntList pad, String mode="constant", Float value=None) => Pad'],
    "contiguous": method("Tensor (Tensor input) => Contiguous"),
    "clone": method("Tensor (Tensor input) => Clone"),
    # ---- [compat s3] more shape, joining, splitting and strided functions (functors/shape.py)
    "atleast_1d": ["Tensor (Tensor input) => Atleast1d", "TensorTuple (TensorTuple tensors=[]) => Atleast1dTuple"],
    "atleast_2d": ["Tensor (Tensor input) => Atleast2d", "TensorTuple (TensorTuple tensors=[]) => Atleast2dTuple"],
    "atleast_3d": ["Tensor (Tensor input) => Atleast3d", "TensorTuple (TensorTuple tensors=[]) => Atleast3dTuple"],
    "block_diag": ["Tensor (TensorTuple tensors=[]) => BlockDiag"],
    "broadcast_tensors": ["TensorTuple (TensorTuple tensors=[]) => BroadcastTensors"],
    "cartesian_prod": ["Tensor (TensorTuple tensors=[]) => CartesianProd"],
    "combinations": ["Tensor (Tensor input, Int r=2, Bool with_replacement=False) => Combinations"],
    "meshgrid": ["TensorTuple (TensorTuple tensors=[], *, String indexing=None) => Meshgrid"],
    "column_stack": ["Tensor (TensorTuple tensors) => ColumnStack"],
    "hstack": ["Tensor (TensorTuple tensors) => Hstack"],
    "vstack": ["Tensor (TensorTuple tensors) => Vstack"],
    "row_stack": ["Tensor (TensorTuple tensors) => Vstack"],
    "dstack": ["Tensor (TensorTuple tensors) => Dstack"],
    "concatenate": ["Tensor (TensorTuple tensors, Int dim=0) => Cat", "Tensor (TensorTuple tensors, *, Int axis) => Cat"],
    "tensor_split": method("TensorTuple (Tensor input, Int sections, Int dim=0) => TensorSplitSections",
                           "TensorTuple (Tensor input, IntList indices, Int dim=0) => TensorSplitIndices",
                           "TensorTuple (Tensor input, Tensor tensor_indices_or_sections, Int dim=0) => TensorSplitTensor"),
    "hsplit": method("TensorTuple (Tensor input, Int sections) => Hsplit",
                     "TensorTuple (Tensor input, IntList indices) => Hsplit"),
    "vsplit": method("TensorTuple (Tensor input, Int sections) => Vsplit",
                     "TensorTuple (Tensor input, IntList indices) => Vsplit"),
    "dsplit": method("TensorTuple (Tensor input, Int sections) => Dsplit",
                     "TensorTuple (Tensor input, IntList indices) => Dsplit"),
    "split_with_sizes": method("TensorTuple (Tensor input, IntList split_sizes, Int dim=0) => SplitWithSizesChecked"),
    "unsafe_split": method("TensorTuple (Tensor input, Int split_size, Int dim=0) => Split"),
    "unsafe_chunk": method("TensorTuple (Tensor input, Int chunks, Int dim=0) => Chunk"),
    "unsafe_split_with_sizes": method(
        "TensorTuple (Tensor input, IntList split_sizes, Int dim=0) => SplitWithSizesChecked"),
    "movedim": method("Tensor (Tensor input, IntList source, IntList destination) => Movedim"),
    "moveaxis": method("Tensor (Tensor input, IntList source, IntList destination) => Movedim"),
    "swapaxes": method("Tensor (Tensor input, Int axis0, Int axis1) => Transpose"),
    "swapdims": method("Tensor (Tensor input, Int dim0, Int dim1) => Transpose"),
    "adjoint": method("Tensor (Tensor input) => Adjoint"),
    "ravel": method("Tensor (Tensor input) => Ravel"),
    "rot90": method("Tensor (Tensor input, Int k=1, IntList dims=[0, 1]) => Rot90"),
    "fliplr": method("Tensor (Tensor input) => Fliplr"),
    "flipud": method("Tensor (Tensor input) => Flipud"),
    "diff": method("Tensor (Tensor input, Int n=1, Int dim=-1, Tensor prepend=None, Tensor append=None) => Diff"),
    "repeat_interleave": method(
        "Tensor (Tensor input, Tensor repeats, Int dim=None, *, Int output_size=None) => RepeatInterleave",
        "Tensor (Tensor input, Int repeats, Int dim=None, *, Int output_size=None) => RepeatInterleaveInt",
        "Tensor (Tensor repeats, *, Int output_size=None) => RepeatInterleaveIndices"),
    "vander": ["Tensor (Tensor x, Int N=None, Bool increasing=False) => Vander"],
    "constant_pad_nd": ["Tensor (Tensor input, IntList pad, Scalar value=0) => ConstantPadNd"],
    "select": method("Tensor (Tensor input, Int dim, Int index) => Select"),
    "as_strided": method("Tensor (Tensor input, Shape size, Shape stride, Int storage_offset=None) => AsStrided"),
    "as_strided_scatter": method("Tensor (Tensor input, Tensor src, Shape size, Shape stride, "
                                 "Int storage_offset=None) => AsStridedScatter"),
    "narrow_copy": method("Tensor (Tensor input, Int dim, Int start, Int length) => NarrowCopy"),
    "alias_copy": ["Tensor (Tensor input) => AliasCopy"],
    "as_strided_copy": ["Tensor (Tensor input, Shape size, Shape stride, Int storage_offset=None) => AsStridedCopy"],
    "detach_copy": ["Tensor (Tensor input) => DetachCopy"],
    "expand_copy": ["Tensor (Tensor input, Shape size, *, Bool implicit=False) => ExpandCopy"],
    "permute_copy": ["Tensor (Tensor input, IntList dims) => PermuteCopy"],
    "select_copy": ["Tensor (Tensor input, Int dim, Int index) => SelectCopy"],
    "slice_copy": ["Tensor (Tensor input, Int dim=0, Int start=None, Int end=None, Int step=1) => SliceCopy"],
    "split_copy": ["TensorTuple (Tensor input, Int split_size, Int dim=0) => SplitCopy"],
    "split_with_sizes_copy": ["TensorTuple (Tensor input, IntList split_sizes, Int dim=0) => SplitWithSizesCopy"],
    "squeeze_copy": ["Tensor (Tensor input, IntList dim=None) => SqueezeCopy"],
    "t_copy": ["Tensor (Tensor input) => TCopy"],
    "transpose_copy": ["Tensor (Tensor input, Int dim0, Int dim1) => TransposeCopy"],
    "unbind_copy": ["TensorTuple (Tensor input, Int dim=0) => UnbindCopy"],
    "unfold_copy": ["Tensor (Tensor input, Int dimension, Int size, Int step) => UnfoldCopy"],
    "unsqueeze_copy": ["Tensor (Tensor input, Int dim) => UnsqueezeCopy"],
    "view_copy": ["Tensor (Tensor input, Shape size) => ViewCopy"],
    "detach": ["Tensor (Tensor input) => Detach"],
    "detach_": ["Tensor (Tensor input) => DetachInplace"],
    # [compat s3] indexing, scatter and take (functors/index.py)
    "scatter_reduce": method(("Tensor (Tensor input, Int dim, Tensor index, Tensor src, String reduce, *, "
                              "Bool include_self=True, Bool inplace=False) => ScatterReduce"), inplace=True),
    "index_copy": method(("Tensor (Tensor input, Int dim, Tensor index, Tensor source, *, Bool inplace=False) "
                          "=> IndexCopy"), inplace=True),
    "index_fill": method(
        "Tensor (Tensor input, Int dim, Tensor index, Scalar value, *, Bool inplace=False) => IndexFill",
        "Tensor (Tensor input, Int dim, Tensor index, Tensor value, *, Bool inplace=False) => IndexFill", inplace=True),
    "index_reduce": method(("Tensor (Tensor input, Int dim, Tensor index, Tensor source, String reduce, *, "
                            "Bool include_self=True, Bool inplace=False) => IndexReduce"), inplace=True),
    "take": method("Tensor (Tensor input, Tensor index) => Take"),
    "take_along_dim": method("Tensor (Tensor input, Tensor indices, Int dim=None) => TakeAlongDim"),
    "put": method(("Tensor (Tensor input, Tensor index, Tensor source, Bool accumulate=False, *, Bool inplace=False) "
                   "=> Put"), inplace=True),
    "masked_scatter": method("Tensor (Tensor input, Tensor mask, Tensor source, *, Bool inplace=False) => MaskedScatter",
                             inplace=True),
    "nonzero_static": method("Tensor (Tensor input, *, Int size, Int fill_value=-1) => NonzeroStatic"),
    "unravel_index": ["TensorTuple (Tensor indices, IntList shape) => UnravelIndex"],
    "select_scatter": method("Tensor (Tensor input, Tensor src, Int dim, Int index) => SelectScatter"),
    "slice_scatter": method("Tensor (Tensor input, Tensor src, Int dim=0, Int start=None, Int end=None, Int step=1) "
                            "=> SliceScatter"),
    "index_put_": ["Tensor (Tensor input, TensorTuple indices, Tensor values, Bool accumulate=False) => IndexPutInplace"],
    "fill": ["Tensor (Tensor input, Scalar value) => Fill", "Tensor (Tensor input, Tensor value) => Fill"],
    "fill_": ["Tensor (Tensor input, Scalar value) => FillInplace", "Tensor (Tensor input, Tensor value) => FillInplace"],
    "zero_": ["Tensor (Tensor input) => ZeroInplace"],
    "as_strided_": ["Tensor (Tensor input, Shape size, Shape stride, Int storage_offset=None) => AsStridedInplace"],
    "resize_as_": ["Tensor (Tensor input, Tensor the_template) => ResizeAsInplace"],
    # ---- end [compat s3]
    # ---- linear algebra (functors/linalg.py)
    "mm": method("Tensor (Tensor input, Tensor mat2) => Mm"),
    "bmm": method("Tensor (Tensor input, Tensor mat2) => Bmm"),
    "dot": method("Tensor (Tensor input, Tensor tensor) => Dot"),
    "outer": method("Tensor (Tensor input, Tensor vec2) => Outer"),
    "linear": ["Tensor (Tensor input, Tensor weight, Tensor bias=None) => Linear"],
    "baddbmm": method(("Tensor (Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1, "
                       "Bool inplace=False) => Baddbmm"), inplace=True),
    "einsum": ["Tensor (String equation, TensorTuple operands) => Einsum"],
    # ---- conversion
    "cast": ["Tensor (Tensor input, DataType dtype) => Cast"],
    # ---- creation (a Shape also takes varargs ints: zeros(2, 3) is zeros((2, 3)))
    "zeros": [("Tensor (Shape size, *, DataType dtype=None, Device device=None, Bool requires_grad=False) "
               "=> Zeros"),
              "Tensor (Shape size, *, DataType dtype=None, Placement placement, SbpList sbp, Bool requires_grad=False) => GlobalZeros"],
    "ones": ["Tensor (Shape size, *, DataType dtype=None, Device device=None, Bool requires_grad=False) => Ones",
             "Tensor (Shape size, *, DataType dtype=None, Placement placement, SbpList sbp, Bool requires_grad=False) => GlobalOnes"],
    "full": [("Tensor (Shape size, Scalar fill_value, *, DataType dtype=None, Device device=None, "
              "Bool requires_grad=False) => Full"),
             ("Tensor (Shape size, Scalar fill_value, *, DataType dtype=None, Placement placement, SbpList sbp, "
              "Bool requires_grad=False) => GlobalFull")],
    "arange": [
        "Tensor (Scalar end, *, DataType dtype=None, Device device=None, Bool requires_grad=False) => ArangeEnd",
        ("Tensor (Scalar start, Scalar end, Scalar step=1, *, DataType dtype=None, Device device=None, "
         "Bool requires_grad=False) => Arange"),
        ("Tensor (Scalar end, *, DataType dtype=None, Placement placement, SbpList sbp, "
         "Bool requires_grad=False) => GlobalArangeEnd"),
        ("Tensor (Scalar start, Scalar end, Scalar step=1, *, DataType dtype=None, Placement placement, "
         "SbpList sbp, Bool requires_grad=False) => GlobalArange"),
    ],
    "rand": [("Tensor (Shape size, *, Generator generator=None, DataType dtype=None, Device device=None, "
              "Bool requires_grad=False) => Rand"),
             ("Tensor (Shape size, *, Generator generator=None, DataType dtype=None, Placement placement, "
              "SbpList sbp, Bool requires_grad=False) => GlobalRand")],
    "randn": [("Tensor (Shape size, *, Generator generator=None, DataType dtype=None, Device device=None, "
               "Bool requires_grad=False) => Randn"),
              ("Tensor (Shape size, *, Generator generator=None, DataType dtype=None, Placement placement, "
               "SbpList sbp, Bool requires_grad=False) => GlobalRandn")],
    "empty": ["Tensor (Shape size, *, DataType dtype=None, Device device=None, Bool requires_grad=False) => Empty",
              "Tensor (Shape size, *, DataType dtype=None, Placement placement, SbpList sbp, Bool requires_grad=False) => GlobalZeros"],
    "zeros_like": [("Tensor (Tensor input, *, DataType dtype=None, Device device=None, Placement placement=None, "
                    "SbpList sbp=None, Bool requires_grad=False) => ZerosLike")],
    "ones_like": [("Tensor (Tensor input, *, DataType dtype=None, Device device=None, Placement placement=None, "
                   "SbpList sbp=None, Bool requires_grad=False) => OnesLike")],
    "empty_like": [("Tensor (Tensor input, *, DataType dtype=None, Device device=None, Placement placement=None, "
                    "SbpList sbp=None, Bool requires_grad=False) => EmptyLike")],
    "full_like": [("Tensor (Tensor input, Scalar fill_value, *, DataType dtype=None, Device device=None, "
                   "Placement placement=None, SbpList sbp=None, Bool requires_grad=False) => FullLike")],
    "rand_like": [("Tensor (Tensor input, *, DataType dtype=None, Device device=None, Placement placement=None, "
                   "SbpList sbp=None, Bool requires_grad=False) => RandLike")],
    "randn_like": [("Tensor (Tensor input, *, DataType dtype=None, Device device=None, Placement placement=None, "
                    "SbpList sbp=None, Bool requires_grad=False) => RandnLike")],
    "eye": [("Tensor (Int n, Int m=None, *, DataType dtype=None, Device device=None, Bool requires_grad=False) "
             "=> Eye"),
            ("Tensor (Int n, Int m=None, *, DataType dtype=None, Placement placement, SbpList sbp, "
             "Bool requires_grad=False) => GlobalEye")],
    "linspace": [("Tensor (Scalar start, Scalar end, Int steps, *, DataType dtype=None, Device device=None, "
                  "Bool requires_grad=False) => Linspace"),
                 ("Tensor (Scalar start, Scalar end, Int steps, *, DataType dtype=None, Placement placement, "
                  "SbpList sbp, Bool requires_grad=False) => GlobalLinspace")],
    "logspace": [("Tensor (Scalar start, Scalar end, Int steps, Float base=10.0, *, DataType dtype=None, "
                  "Device device=None, Bool requires_grad=False) => Logspace"),
                 ("Tensor (Scalar start, Scalar end, Int steps, Float base=10.0, *, DataType dtype=None, "
                  "Placement placement, SbpList sbp, Bool requires_grad=False) => GlobalLogspace")],
    "randint": [
        ("Tensor (Int low, Int high, Shape size, *, Generator generator=None, DataType dtype=None, "
         "Device device=None, Bool requires_grad=False) => RandintLow"),
        ("Tensor (Int high, Shape size, *, Generator generator=None, DataType dtype=None, Device device=None, "
         "Bool requires_grad=False) => Randint"),
        ("Tensor (Int low, Int high, Shape size, *, Generator generator=None, DataType dtype=None, "
         "Placement placement, SbpList sbp, Bool requires_grad=False) => GlobalRandintLow"),
        ("Tensor (Int high, Shape size, *, Generator generator=None, DataType dtype=None, Placement placement, "
         "SbpList sbp, Bool requires_grad=False) => GlobalRandint"),
    ],
    "randperm": [("Tensor (Int n, *, Generator generator=None, DataType dtype=None, Device device=None, "
                  "Bool requires_grad=False) => Randperm"),
                 ("Tensor (Int n, *, Generator generator=None, DataType dtype=None, Placement placement, "
                  "SbpList sbp, Bool requires_grad=False) => GlobalRandperm")],
    "normal": [
        "Tensor (Tensor mean, Tensor std, *, Generator generator=None) => NormalTensorTensor",
        "Tensor (Tensor mean, Float std=1.0, *, Generator generator=None) => NormalTensorFloat",
        "Tensor (Float mean, Tensor std, *, Generator generator=None) => NormalFloatTensor",
        ("Tensor (Float mean, Float std, Shape size, *, Generator generator=None, DataType dtype=None, "
         "Device device=None, Bool requires_grad=False) => Normal"),
        ("Tensor (Float mean, Float std, Shape size, *, Generator generator=None, DataType dtype=None, "
         "Placement placement, SbpList sbp, Bool requires_grad=False) => GlobalNormal"),
    ],
    # ---- [compat c3] random draws, windows, triangle indices, more creation (functors/creation.py)
    "multinomial": method(("Tensor (Tensor input, Int num_samples, Bool replacement=False, *, "
                           "Generator generator=None) => Multinomial")),
    "bernoulli": method("Tensor (Tensor input, *, Generator generator=None) => Bernoulli",
                        "Tensor (Tensor input, Float p, *, Generator generator=None) => BernoulliProb"),
    "poisson": ["Tensor (Tensor input, Generator generator=None) => Poisson"],
    "binomial": ["Tensor (Tensor count, Tensor prob, Generator generator=None) => Binomial"],
    # Note [Fake quantization] (functors/fake_quant.py)
    "fake_quantize_per_tensor_affine": [
        ("Tensor (Tensor input, Float scale, Int zero_point, Int quant_min, Int quant_max) "
         "=> FakeQuantizePerTensorAffine"),
        ("Tensor (Tensor input, Tensor scale, Tensor zero_point, Int quant_min, Int quant_max) "
         "=> FakeQuantizePerTensorAffine")],
    "fake_quantize_per_channel_affine": [("Tensor (Tensor input, Tensor scale, Tensor zero_point, Int axis, "
                                          "Int quant_min, Int quant_max) => FakeQuantizePerChannelAffine")],
    "randint_like": [
        ("Tensor (Tensor input, Int high, *, DataType dtype=None, Device device=None, Placement placement=None, "
         "SbpList sbp=None, Bool requires_grad=False) => RandintLike"),
        ("Tensor (Tensor input, Int low, Int high, *, DataType dtype=None, Device device=None, "
         "Placement placement=None, SbpList sbp=None, Bool requires_grad=False) => RandintLikeLow"),
    ],
    "hann_window": [("Tensor (Int window_length, Bool periodic=True, *, DataType dtype=None, Device device=None, "
                     "Bool requires_grad=False) => HannWindow")],
    "hamming_window": [("Tensor (Int window_length, Bool periodic=True, Float alpha=0.54, Float beta=0.46, *, "
                        "DataType dtype=None, Device device=None, Bool requires_grad=False) => HammingWindow")],
    "blackman_window": [("Tensor (Int window_length, Bool periodic=True, *, DataType dtype=None, Device device=None, "
                         "Bool requires_grad=False) => BlackmanWindow")],
    "bartlett_window": [("Tensor (Int window_length, Bool periodic=True, *, DataType dtype=None, Device device=None, "
                         "Bool requires_grad=False) => BartlettWindow")],
    "kaiser_window": [("Tensor (Int window_length, Bool periodic=True, Float beta=12.0, *, DataType dtype=None, "
                       "Device device=None, Bool requires_grad=False) => KaiserWindow")],
    "tril_indices": [("Tensor (Int row, Int col, Int offset=0, *, DataType dtype=None, Device device=None) "
                      "=> TrilIndices")],
    "triu_indices": [("Tensor (Int row, Int col, Int offset=0, *, DataType dtype=None, Device device=None) "
                      "=> TriuIndices")],
    "scalar_tensor": [("Tensor (Scalar s, *, DataType dtype=None, Device device=None, Bool requires_grad=False) "
                       "=> ScalarTensor")],
    "empty_strided": [("Tensor (Shape size, Shape stride, *, DataType dtype=None, Device device=None, "
                       "Bool requires_grad=False) => EmptyStrided")],
    "range": [("Tensor (Scalar start, Scalar end, Scalar step=1, *, DataType dtype=None, Device device=None, "
               "Bool requires_grad=False) => Range")],
    # ---- end [compat c3]
    # ---- indexing, scatter / gather
    "gather": method("Tensor (Tensor input, Int dim, Tensor index, *, Bool sparse_grad=False) => DimGather"),
    "scatter": method(
        "Tensor (Tensor input, Int dim, Tensor index, Tensor src, *, String reduce=None, Bool inplace=False) "
        "=> DimScatter",
        "Tensor (Tensor input, Int dim, Tensor index, Scalar value, *, String reduce=None, Bool inplace=False) "
        "=> DimScatterScalar", inplace=True),
    "scatter_add": method("Tensor (Tensor input, Int dim, Tensor index, Tensor src, *, Bool inplace=False) => DimScatterAdd", inplace=True),
    "index_select": method("Tensor (Tensor input, Int dim, Tensor index) => IndexSelect"),
    "index_add": method(("Tensor (Tensor input, Int dim, Tensor index, Tensor source, *, Scalar alpha=1, "
                   "Bool inplace=False) => IndexAdd"), inplace=True),
    "index_put": method(("Tensor (Tensor input, TensorTuple indices, Tensor values, Bool accumulate=False, *, "
                   "Bool inplace=False) => IndexPut"), inplace=True),
    "masked_fill": method(
        "Tensor (Tensor input, Tensor mask, Scalar value, *, Bool inplace=False) => MaskedFill",
        "Tensor (Tensor input, Tensor mask, Tensor value, *, Bool inplace=False) => MaskedFillTensor", inplace=True),
    "masked_select": method("Tensor (Tensor input, Tensor mask) => MaskedSelect"),
    "nonzero": method("Tensor (Tensor input, *, Bool as_tuple=False) => Nonzero"),
    "count_nonzero": method("Tensor (Tensor input, IntList dim=None) => CountNonzero"),
    # ---- [compat t1] the rest of torch's functions on dense tensors (functors/reduce.py, functors/creation.py,
    # functors/shape.py)
    "isin": [
        "Tensor (Tensor elements, Tensor test_elements, *, Bool assume_unique=False, Bool invert=False) => Isin",
        ("Tensor (Tensor elements, Scalar test_element, *, Bool assume_unique=False, Bool invert=False) "
         "=> IsinScalar"),
        ("Tensor (Scalar element, Tensor test_elements, *, Bool assume_unique=False, Bool invert=False) "
         "=> IsinScalarTensor")],
    "gradient": [
        "TensorTuple (Tensor input, *, Scalar spacing=None, IntList dim=None, Int edge_order=1) => Gradient",
        "TensorTuple (Tensor input, *, FloatList spacing, IntList dim=None, Int edge_order=1) => Gradient",
        "TensorTuple (Tensor input, *, TensorTuple spacing, IntList dim=None, Int edge_order=1) => Gradient"],
    "histogramdd": [
        ("TensorTuple (Tensor input, Int bins, *, FloatList range=None, Tensor weight=None, Bool density=False) "
         "=> Histogramdd"),
        ("TensorTuple (Tensor input, IntList bins, *, FloatList range=None, Tensor weight=None, "
         "Bool density=False) => Histogramdd"),
        ("TensorTuple (Tensor input, TensorTuple bins, *, FloatList range=None, Tensor weight=None, "
         "Bool density=False) => Histogramdd")],
    # ---- end [compat t1]
}
