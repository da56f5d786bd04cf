;; expect: = module rejected: import wasi_snapshot_preview1.fd_write has signature (ii)->(i), the host provides (iiii)->(i)
(module
  (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32) (result i32)))
  (func (export "run") (result i32) (i32.const 0)))
