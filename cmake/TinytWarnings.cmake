# tinyt_warnings(<target>): the warning flags for tinyt's own targets (never for consumers).
function(tinyt_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic
                                           $<$<BOOL:${TINYT_WERROR}>:-Werror>)
endfunction()
