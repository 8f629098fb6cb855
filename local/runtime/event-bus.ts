/** The local event bus: `PutEvents` from the API and from `events:putEvents` tasks, kept in order. */
import { randomUUID } from 'node:crypto';

/** A PutEvents entry as the local bus keeps it. */
export interface LocalEvent {
  id: string;
  time: string;
  source: string;
  detailType: string;
  detail: unknown;
  eventBusName: string;
}

/** A `PutEvents` entry; `Detail` is a JSON string (the API) or an object (the Step Functions integration). */
export interface PutEventsEntry {
  Source?: string;
  DetailType?: string;
  Detail?: string | object;
  EventBusName?: string;
}

/** Keeps every event put on it and hands each to `onEvent`. */
export class LocalEventBus {
  readonly events: LocalEvent[] = [];

  constructor(private readonly onEvent?: (event: LocalEvent) => void) {}

  /** Puts events on the bus and returns their ids, in order. */
  put(entries: PutEventsEntry[]): string[] {
    return entries.map((entry) => {
      const event: LocalEvent = {
        id: randomUUID(),
        time: new Date().toISOString(),
        source: entry.Source ?? '',
        detailType: entry.DetailType ?? '',
        detail: typeof entry.Detail === 'string' ? JSON.parse(entry.Detail) : (entry.Detail ?? {}),
        eventBusName: entry.EventBusName ?? 'default',
      };
      this.events.push(event);
      this.onEvent?.(event);
      return event.id;
    });
  }
}
