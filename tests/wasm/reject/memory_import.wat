;; expect: = module rejected: import env.memory is not a function (only function imports are allowed)
(module (import "env" "memory" (memory 1)) (func (export "run") (result i32) (i32.const 0)))
