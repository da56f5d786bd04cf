# cmake -DIN=file -DOUT=header.h -DNAME=ident -P EmbedFile.cmake
# Writes a C header holding the exact bytes of IN as `static const unsigned char NAME[]`
# (followed by one NUL that NAME_len does not count) and `static const unsigned int NAME_len`.
if(NOT IN OR NOT OUT OR NOT NAME)
  message(FATAL_ERROR "usage: cmake -DIN=file -DOUT=header.h -DNAME=ident -P EmbedFile.cmake")
endif()
if(NOT NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
  message(FATAL_ERROR "EmbedFile: NAME '${NAME}' is not a C identifier")
endif()
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# 16 bytes per line keeps the header readable and diffable.
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n  " bytes "${bytes}")
get_filename_component(base "${IN}" NAME)
file(WRITE "${OUT}.tmp"
  "/* Generated from ${base} by gpuwasm's EmbedFile.cmake; do not edit. */\n"
  "#pragma once\n"
  "static const unsigned char ${NAME}[] = {\n  ${bytes}0x00\n};\n"
  "static const unsigned int ${NAME}_len = ${len}u;\n")
file(RENAME "${OUT}.tmp" "${OUT}")
