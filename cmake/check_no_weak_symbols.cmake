# Fails the build when one of the objects named in OBJECTS (a |-separated list) that matches PATTERN defines a
# weak or unique symbol: an inline function or template instance, of which the linker keeps ONE copy for the
# whole library. If an ISA table's object (AVX-512 VNNI, say) emitted such a copy, an AVX2-only CPU could end
# up running its instructions from an AVX2 caller. The ISA tables keep everything shared in anonymous
# namespaces; this check, run after every optimized build of webxnn_core, keeps them that way.
#   cmake -DNM=<nm> -DPATTERN=<regex> -DOBJECTS=<a|b|...> -P check_no_weak_symbols.cmake
string(REPLACE "|" ";" objects "${OBJECTS}")
set(found "")
foreach(obj IN LISTS objects)
  if(NOT obj MATCHES "${PATTERN}")
    continue()
  endif()
  execute_process(COMMAND "${NM}" "${obj}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${obj}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")  # (mangled names: no spaces, brackets or semicolons)
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-fA-F]* *[WVu] ([^ ]+)$")
      set(name "${CMAKE_MATCH_1}")  # (the next MATCHES resets CMAKE_MATCH_1)
      if(NOT name MATCHES "^DW\\.ref\\.")
        list(APPEND found "${obj}: ${name}")
      endif()
    endif()
  endforeach()
endforeach()
if(found)
  list(JOIN found "\n  " lines)
  message(FATAL_ERROR "ISA kernel objects define weak symbols (put shared code in an anonymous namespace):\n  ${lines}")
endif()
