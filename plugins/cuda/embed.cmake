# embed.cmake — writes a text file as a C string: cuda_attention.cu as cuda_attention_cu[] for
# cuda_attention.c, which hands it to NVRTC.
#   cmake -DIN=FILE -DOUT=FILE.c -DNAME=SYMBOL -P embed.cmake
file(READ "${IN}" text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "?" "\\?" text "${text}") # no trigraphs
string(REPLACE "\n" "\\n\"\n  \"" text "${text}")
file(WRITE "${OUT}.tmp" "/* generated from ${IN} by embed.cmake: do not edit */\nconst char ${NAME}[] =\n  \"${text}\";\n")
file(RENAME "${OUT}.tmp" "${OUT}")
