# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed_bin.cmake
# Writes OUT defining `const unsigned char NAME[]` (the bytes of IN) and `const size_t NAME_size`.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR n "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* generated from ${IN} by plugins/cpu/llvm/embed_bin.cmake */\n#include <stddef.h>\n"
                  "const unsigned char ${NAME}[] = {${bytes} 0};\nconst size_t ${NAME}_size = ${n};\n")
