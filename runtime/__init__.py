"""fusegrad.runtime: the compile pipeline, caches, executor and transforms."""
from .transforms import grad, value_and_grad
from .compile import CompiledFunction, compile
from .stats import CacheInfo, cache_info, clear_caches
