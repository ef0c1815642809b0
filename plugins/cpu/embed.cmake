# cmake -DIN=header -DOUT=file.c -P embed.cmake
# Writes OUT defining `const char coil_cpu_math_source[]`: the bytes of IN, NUL-terminated, so
# the plugin can write the header beside every generated source it compiles.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* generated from coil_cpu_math.h by plugins/cpu/embed.cmake */\n"
                  "const char coil_cpu_math_source[] = {${bytes} 0};\n")
