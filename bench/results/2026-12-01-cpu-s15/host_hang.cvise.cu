main() {
  for (;;)
    ;
}
