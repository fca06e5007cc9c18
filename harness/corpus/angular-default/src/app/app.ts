import { Component, signal } from '@angular/core';
import { RouterOutlet } from '@angular/router';

@Component({
  imports: [RouterOutlet],
  selector: 'app-root',
  styleUrl: './app.css',
  templateUrl: './app.html',
})
export class App {
  protected readonly title = signal('angular-default');
  // Added to the generated app: a counter, so a click proves the app is live.
  protected readonly count = signal(0);
  protected increment(): void {
    this.count.update((n) => n + 1);
  }
}
