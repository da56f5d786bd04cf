;; expect: = module uses memory64, which gpuwasm does not support
(module (memory i64 1) (func (export "run") (result i32) (i32.load (i64.const 0))))
