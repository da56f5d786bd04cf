#!/usr/bin/env python3
"""Generates ops_*.wat: one exported `test_<op>` () -> i32 per wasm numeric operator, which folds
the operator over every pair (or every value) of a table of edge-case inputs into an FNV-style
hash. The corpus runner compares each result between wabt's interpreter and gpuwasm's engine.
NaN results are canonicalised (their bit patterns are nondeterministic in the spec); operations
that would trap are skipped by guards. Run: python3 gen_ops.py (writes next to itself)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
NAN32, NAN64 = float('nan'), float('nan')

I32 = [0, 1, 2, 7, 31, 32, 33, -1, -2, -7, 0x7fffffff, -0x80000000, 0x12345678, -0x21524111,
       0x0000ff00, 0x00010000]
I64 = [0, 1, 2, 63, 64, -1, -2, 0x7fffffffffffffff, -0x8000000000000000, 0x123456789abcdef0,
       -0x0123456789abcdef, 0xffffffff, 0x100000000, 37]
F32 = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.4028234663852886e38, 1.1754943508222875e-38,
       1.401298464324817e-45, float('inf'), float('-inf'), NAN32, 2147483520.0, -2147483648.0,
       4294967040.0, 16777217.0, 0.1, 1e10]
F64 = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 1.7976931348623157e308, 2.2250738585072014e-308,
       5e-324, float('inf'), float('-inf'), NAN64, 2147483647.0, -2147483648.0, 9.2233720368547748e18,
       -9.2233720368547758e18, 0.1, 1e10, 4294967295.0]

def data_bytes(fmt, values):
    return b''.join(struct.pack(fmt, v) for v in values)

def wat_string(b):
    return ''.join('\\%02x' % x for x in b)

TABLES = {  # type -> (offset, values, struct fmt, load, size)
    'i32': (0, I32, '<i', 'i32.load', 4),
    'i64': (1024, I64, '<q', 'i64.load', 8),
    'f32': (2048, F32, '<f', 'f32.load', 4),
    'f64': (3072, F64, '<d', 'f64.load', 8),
}

def fold(rtype, expr):
    """An i32 expression folding `expr` (of type rtype) for the hash."""
    if rtype == 'i32':
        return expr
    if rtype == 'i64':
        return f'(call $fold64 {expr})'
    if rtype == 'f32':
        return f'(call $canon32 {expr})'
    if rtype == 'f64':
        return f'(call $fold64 (call $canon64 {expr}))'
    raise ValueError(rtype)

def binop(name, t, rtype, guard=None):
    off, vals, _, load, size = TABLES[t]
    n = len(vals)
    g = guard or '(i32.const 1)'
    return f'''
  (func (export "test_{name.replace('.', '_')}") (result i32)
    (local $i i32) (local $j i32) (local $h i32) (local $a {t}) (local $b {t})
    (local.set $h (i32.const 0x811c9dc5))
    (loop $li
      (local.set $j (i32.const 0))
      (loop $lj
        (local.set $a ({load} (i32.add (i32.const {off}) (i32.mul (local.get $i) (i32.const {size})))))
        (local.set $b ({load} (i32.add (i32.const {off}) (i32.mul (local.get $j) (i32.const {size})))))
        (if {g} (then
          (local.set $h (i32.mul (i32.xor (local.get $h) {fold(rtype, f'({name} (local.get $a) (local.get $b))')}) (i32.const 0x01000193)))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br_if $lj (i32.lt_u (local.get $j) (i32.const {n}))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $li (i32.lt_u (local.get $i) (i32.const {n}))))
    (local.get $h))'''

def unop(name, t, rtype, guard=None):
    off, vals, _, load, size = TABLES[t]
    n = len(vals)
    g = guard or '(i32.const 1)'
    return f'''
  (func (export "test_{name.replace('.', '_')}") (result i32)
    (local $i i32) (local $h i32) (local $a {t})
    (local.set $h (i32.const 0x811c9dc5))
    (loop $li
      (local.set $a ({load} (i32.add (i32.const {off}) (i32.mul (local.get $i) (i32.const {size})))))
      (if {g} (then
        (local.set $h (i32.mul (i32.xor (local.get $h) {fold(rtype, f'({name} (local.get $a))')}) (i32.const 0x01000193)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $li (i32.lt_u (local.get $i) (i32.const {n}))))
    (local.get $h))'''

HELPERS = '''
  (memory (export "memory") 1)
  (func $fold64 (param $x i64) (result i32)
    (i32.wrap_i64 (i64.xor (local.get $x) (i64.shr_u (local.get $x) (i64.const 32)))))
  (func $canon32 (param $x f32) (result i32)
    (if (result i32) (f32.ne (local.get $x) (local.get $x))
      (then (i32.const 0x7fc00000)) (else (i32.reinterpret_f32 (local.get $x)))))
  (func $canon64 (param $x f64) (result i64)
    (if (result i64) (f64.ne (local.get $x) (local.get $x))
      (then (i64.const 0x7ff8000000000000)) (else (i64.reinterpret_f64 (local.get $x)))))
'''

def module(funcs):
    data = ''.join(f'  (data (i32.const {off}) "{wat_string(data_bytes(fmt, vals))}")\n'
                   for (off, vals, fmt, _, _) in TABLES.values())
    return '(module\n' + HELPERS + data + ''.join(funcs) + '\n)\n'

def i_ops(t):
    int_min = '(i32.const 0x80000000)' if t == 'i32' else '(i64.const 0x8000000000000000)'
    nz = f'({t}.ne (local.get $b) ({t}.const 0))'
    no_ovf = f'(i32.and {nz} (i32.or ({t}.ne (local.get $a) {int_min}) ({t}.ne (local.get $b) ({t}.const -1))))'
    funcs = [binop(f'{t}.{op}', t, t) for op in
             ['add', 'sub', 'mul', 'and', 'or', 'xor', 'shl', 'shr_s', 'shr_u', 'rotl', 'rotr']]
    funcs += [binop(f'{t}.{op}', t, 'i32') for op in
              ['eq', 'ne', 'lt_s', 'lt_u', 'gt_s', 'gt_u', 'le_s', 'le_u', 'ge_s', 'ge_u']]
    funcs += [binop(f'{t}.div_s', t, t, no_ovf), binop(f'{t}.rem_s', t, t, nz),
              binop(f'{t}.div_u', t, t, nz), binop(f'{t}.rem_u', t, t, nz)]
    funcs += [unop(f'{t}.{op}', t, t) for op in ['clz', 'ctz', 'popcnt', 'extend8_s', 'extend16_s']]
    funcs += [unop(f'{t}.eqz', t, 'i32')]
    if t == 'i64':
        funcs += [unop('i64.extend32_s', t, t), unop('i32.wrap_i64', t, 'i32'),
                  unop('f32.convert_i64_s', t, 'f32'), unop('f32.convert_i64_u', t, 'f32'),
                  unop('f64.convert_i64_s', t, 'f64'), unop('f64.convert_i64_u', t, 'f64'),
                  unop('f64.reinterpret_i64', t, 'f64')]
    else:
        funcs += [unop('i64.extend_i32_s', t, 'i64'), unop('i64.extend_i32_u', t, 'i64'),
                  unop('f32.convert_i32_s', t, 'f32'), unop('f32.convert_i32_u', t, 'f32'),
                  unop('f64.convert_i32_s', t, 'f64'), unop('f64.convert_i32_u', t, 'f64'),
                  unop('f32.reinterpret_i32', t, 'f32')]
    return funcs

def f_ops(t):
    funcs = [binop(f'{t}.{op}', t, t) for op in ['add', 'sub', 'mul', 'div', 'min', 'max', 'copysign']]
    funcs += [binop(f'{t}.{op}', t, 'i32') for op in ['eq', 'ne', 'lt', 'gt', 'le', 'ge']]
    funcs += [unop(f'{t}.{op}', t, t) for op in ['abs', 'neg', 'sqrt', 'ceil', 'floor', 'trunc', 'nearest']]
    for it in ['i32', 'i64']:
        for sign in ['s', 'u']:
            funcs.append(unop(f'{it}.trunc_sat_{t}_{sign}', t, it))
            # Non-saturating truncation traps out of range: only in-range values are fed.
            lo, hi = {('i32', 's'): (-2147483904.0, 2147483648.0), ('i32', 'u'): (-1.0, 4294967296.0),
                      ('i64', 's'): (-9.223372036854777e18, 9.223372036854775807e18),
                      ('i64', 'u'): (-1.0, 1.8446744073709552e19)}[(it, sign)]
            guard = f'(i32.and ({t}.gt (local.get $a) ({t}.const {lo!r})) ({t}.lt (local.get $a) ({t}.const {hi!r})))'
            funcs.append(unop(f'{it}.trunc_{t}_{sign}', t, it, guard))
    if t == 'f32':
        funcs += [unop('f64.promote_f32', t, 'f64'), unop('i32.reinterpret_f32', t, 'i32')]
    else:
        funcs += [unop('f32.demote_f64', t, 'f32'), unop('i64.reinterpret_f64', t, 'i64')]
    return funcs

for name, funcs in [('ops_i32', i_ops('i32')), ('ops_i64', i_ops('i64')),
                    ('ops_f32', f_ops('f32')), ('ops_f64', f_ops('f64'))]:
    with open(os.path.join(HERE, name + '.wat'), 'w') as f:
        f.write(';; Generated by gen_ops.py; do not edit.\n' + module(funcs))
