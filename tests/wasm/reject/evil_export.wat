(module (func (export "x */ int injected; /*") (result i32) (i32.const 0)))
