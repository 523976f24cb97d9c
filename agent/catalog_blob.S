/* Embeds agent/catalog.yaml into the binary as pf_catalog_yaml (NUL-ended). */
    .section .rodata
    .global pf_catalog_yaml
    .type pf_catalog_yaml, @object
pf_catalog_yaml:
    .incbin CATALOG_FILE
    .byte 0
    .size pf_catalog_yaml, . - pf_catalog_yaml
    .section .note.GNU-stack,"",@progbits
