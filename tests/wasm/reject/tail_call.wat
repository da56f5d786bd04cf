;; expect: = module uses tail calls, which gpuwasm does not support
(module (func $f (result i32) (i32.const 1)) (func (export "run") (result i32) (return_call $f)))
