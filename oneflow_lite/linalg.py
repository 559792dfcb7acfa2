"""``flow.linalg`` (``torch.linalg`` under ``flow.mock_torch``): PyTorch's linear-algebra namespace.

Each function is the functional API's ``linalg_<name>`` (``flow._C.linalg_<name>``), so its
arguments, overloads and errors are those of the functional table; ``matmul`` is ``flow.matmul``.
Singular or non-positive-definite inputs raise :class:`LinAlgError`, a ``RuntimeError``, as
``torch.linalg.LinAlgError``.

Not provided: ``eig`` / ``eigvals`` (their results are complex, and oneflow_lite has no complex
dtype), ``ldl_factor`` / ``ldl_factor_ex`` / ``ldl_solve`` (Bunch-Kaufman pivoting is not
implemented).
"""

from oneflow_lite import functional as _functional
from oneflow_lite.framework.errors import LinAlgError

matmul = _functional.matmul
cholesky = _functional.linalg_cholesky
cholesky_ex = _functional.linalg_cholesky_ex
cond = _functional.linalg_cond
cross = _functional.linalg_cross
det = _functional.linalg_det
diagonal = _functional.linalg_diagonal
eigh = _functional.linalg_eigh
eigvalsh = _functional.linalg_eigvalsh
householder_product = _functional.linalg_householder_product
inv = _functional.linalg_inv
inv_ex = _functional.linalg_inv_ex
lstsq = _functional.linalg_lstsq
lu = _functional.linalg_lu
lu_factor = _functional.linalg_lu_factor
lu_factor_ex = _functional.linalg_lu_factor_ex
lu_solve = _functional.linalg_lu_solve
matrix_exp = _functional.linalg_matrix_exp
matrix_norm = _functional.linalg_matrix_norm
matrix_power = _functional.linalg_matrix_power
matrix_rank = _functional.linalg_matrix_rank
multi_dot = _functional.linalg_multi_dot
norm = _functional.linalg_norm
pinv = _functional.linalg_pinv
qr = _functional.linalg_qr
slogdet = _functional.linalg_slogdet
solve = _functional.linalg_solve
solve_ex = _functional.linalg_solve_ex
solve_triangular = _functional.linalg_solve_triangular
svd = _functional.linalg_svd
svdvals = _functional.linalg_svdvals
tensorinv = _functional.linalg_tensorinv
tensorsolve = _functional.linalg_tensorsolve
vander = _functional.linalg_vander
vecdot = _functional.linalg_vecdot
vector_norm = _functional.linalg_vector_norm

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh", "eigvalsh",
           "householder_product", "inv",
           "inv_ex", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm",
           "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex",
           "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]
