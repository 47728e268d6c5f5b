# Turns a text file into a C source defining `const char SYMBOL[]` (NUL-terminated).
# Usage: cmake -DIN=file -DOUT=file.c -DSYMBOL=name -P embed.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUT}" "/* Generated from ${IN} by cmake/embed.cmake; do not edit. */\n#include <stddef.h>\nconst char ${SYMBOL}[] = {\n${body}0x00};\nconst size_t ${SYMBOL}_len = sizeof(${SYMBOL}) - 1;\n")
