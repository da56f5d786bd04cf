(module (memory i64 1) (func (export "run") (result i32) (i32.load (i64.const 0))))
