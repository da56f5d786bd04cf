;; expect: = module rejected: unknown import env.launch_missiles; unknown import wasi_snapshot_preview1.sock_open
;; code: invalid_argument
(module
  (import "env" "launch_missiles" (func (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "sock_open" (func (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
  (func (export "run") (result i32) (i32.const 0)))
