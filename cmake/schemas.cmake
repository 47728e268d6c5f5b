# Writes each tool's outputSchema as a C string, at build time, from
# bridge/tools/schemas.json: run's is $defs.run_result, look's and ctl's their
# own member, each with the shared $defs copied in. Composing them at start
# (json-c trees of ~200 KB, built and freed among long-lived allocations)
# left rat-py's heap fragmented: 0.2 MB more idle RSS (issue 14).
# Usage: cmake -DIN=schemas.json -DOUT=file.c -P schemas.cmake
cmake_minimum_required(VERSION 3.19) # string(JSON)
file(READ "${IN}" all)
string(JSON defs GET "${all}" "$defs")
string(JSON run GET "${all}" "$defs" "run_result")
string(JSON look GET "${all}" "look")
string(JSON ctl GET "${all}" "ctl")
set(c "/* Generated from ${IN} by cmake/schemas.cmake; do not edit. */\n")
foreach(tool run look ctl)
  string(JSON text SET "${${tool}}" "$defs" "${defs}")
  # CMake prints JSON indented; a raw newline never occurs inside a JSON
  # string, so dropping each newline and the indent after it is safe.
  string(REGEX REPLACE "\n[ \t]*" "" text "${text}")
  file(WRITE "${OUT}.${tool}.json" "${text}")
  file(READ "${OUT}.${tool}.json" hex HEX)
  file(REMOVE "${OUT}.${tool}.json")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" hex "${hex}")
  string(APPEND c "const char tools_schema_${tool}[] = {\n${hex}0x00};\n")
endforeach()
file(WRITE "${OUT}" "${c}")
