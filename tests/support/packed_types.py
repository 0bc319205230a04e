"""The quant types each build of the kernels reads in a packed layout (csrc/quants.c's table), by its isa name."""

PACKED_TYPES = {
    "avx512 vnni": frozenset({"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q3_K", "Q4_K", "Q5_K", "Q6_K"}),
    "avx2": frozenset({"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q3_K", "Q4_K", "Q5_K", "Q6_K"}),
    "avx2 kernels (avx512 machine)": frozenset(
        {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q3_K", "Q4_K", "Q5_K", "Q6_K"}
    ),
}
