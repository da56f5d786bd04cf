(module (import "env" "memory" (memory 1)) (func (export "run") (result i32) (i32.const 0)))
